"""A loopback OpenAI-compatible server for tests, with scripted faults per prompt.

It answers ``POST /v1/chat/completions`` and ``POST /v1/completions`` the way
an OpenAI-compatible endpoint does (the official SDK talks to it unchanged),
and ``POST /v1/messages`` the way Anthropic's Messages API does (its SDK too),
binds 127.0.0.1 on an ephemeral port and serves each request in its own
thread, so a client's concurrency is visible here: ``max_in_flight`` is the
most requests it ever held at once.

Faults are scripted per prompt: ``server.script("q3", Fault.with_status(429,
retry_after=2), Fault.with_status(500))`` makes the next two requests whose
prompt contains ``q3`` fail that way, after which they succeed.  Keying by
prompt rather than by arrival order keeps scripts deterministic when the
client sends requests concurrently.  A success is the model's reply: what
``server.answer(...)`` says for prompts like this one (a fixed text, or one
made from the prompt — see tests/support/chat_replies.py for what chat models say to
each template), else an echo of the prompt, which holds no answer of the
model's own.  Every request is recorded (path, JSON body, headers, arrival
time).  The server stops when its ``with`` block ends, and on its own after
``lifetime`` seconds.

Like a real server it answers ``GET /v1/models`` (the ids given as ``models``;
404 when none are given, as servers without a list do) and takes the
structured-output fields in ``structured`` (``json_schema`` by default): a
request asking another way is refused as ``refusal`` says, and one asking a
way it takes gets, when no rule or fault says otherwise, the smallest object
its schema allows — a constrained model can say nothing else.  The ``grammar``
field is ignored, as servers other than llama.cpp's ignore unknown fields.
The requests of a model's check (:data:`tasks.llm.check.CHECK_PROMPTS`, and
the model list) are kept apart in :attr:`FakeLLMServer.checks`, so that
:attr:`FakeLLMServer.calls` holds a run's own calls, and the scripts and
replies a test gives are for its run's prompts: a check is answered as the
server's model would answer it unprompted (the echo, or the schema's object).
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from tasks.llm.check import CHECK_PROMPTS
from tests.support.loopback_http import BackgroundServer, QuietServer

if TYPE_CHECKING:
    from tasks.llm import LLMClient
    from tasks.warehouse.db import Warehouse


#: Anthropic's Messages API, answered beside the OpenAI-compatible paths (an Anthropic SDK's ``base_url`` is the
#: server's root URL)
MESSAGES = "/v1/messages"


@dataclass(frozen=True)
class Fault:
    """One scripted answer that is not the normal success."""

    kind: str  # status | echo_authorization | hang | malformed | garbage | text
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    message: str = ""
    seconds: float = 0.0

    @classmethod
    def with_status(cls, status: int, message: str = "scripted failure", *, retry_after: float | None = None) -> Fault:
        headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        return cls("status", status=status, headers=headers, message=message)

    @classmethod
    def echo_authorization(cls, status: int = 401) -> Fault:
        """An error whose body quotes the request's ``Authorization`` header, as some proxies and gateways do."""
        return cls("echo_authorization", status=status)

    @classmethod
    def hang(cls, seconds: float = 5.0) -> Fault:
        """Say nothing for ``seconds`` (or until the server stops), then hang up: a client timeout."""
        return cls("hang", seconds=seconds)

    @classmethod
    def malformed(cls) -> Fault:
        """A 200 whose JSON body lacks ``choices``, as a confused proxy might send."""
        return cls("malformed")

    @classmethod
    def text(cls, reply: str) -> Fault:
        """A well-formed 200 whose answer is ``reply``: a model that answers wrongly (wrong language, bad format)."""
        return cls("text", message=reply)

    @classmethod
    def garbage(cls) -> Fault:
        """A 200 labelled JSON whose body is not JSON (a truncated or mangled reply)."""
        return cls("garbage")


@dataclass(frozen=True)
class RecordedCall:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # keys lower-cased
    at: float  # time.monotonic() on arrival


def prompt_of(body: dict[str, Any]) -> str:
    """The text a request asks about: the completion prompt or the chat messages joined (after Anthropic's
    separate ``system`` field, where the request has one)."""
    if "messages" in body:
        system = [str(body["system"])] if body.get("system") else []
        return "\n".join([*system, *(str(m.get("content", "")) for m in body["messages"])])
    return str(body.get("prompt", ""))


#: What a model replies to a prompt: a fixed text, or a text made from the prompt.
Reply = str | Callable[[str], str]


def reply_text(prompt: str) -> str:
    """The success answer when no ``answer`` rule matches: an echo, derived from the prompt so tests can compute it."""
    return f"echo: {prompt}"


#: How a server refuses a structured-output field it does not take: the status and the error body.
Refusal = tuple[int, dict[str, Any]]
REFUSED_FIELD: Refusal = (400, {"error": {"message": "this server does not support that response_format",
                                          "type": "invalid_request_error", "param": "response_format"}})


def structured_mode(body: dict[str, Any]) -> str:
    """Which rung of the structured-output ladder a request asks by (``none`` when it asks by none); ``tool`` for
    Anthropic's one forced tool, whose input schema is the format."""
    if body.get("tools") and isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "tool":
        return "tool"
    form = body.get("response_format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        return "json_schema"
    if isinstance(form, dict) and form.get("type") == "json_object":
        return "json_object_schema" if "schema" in form else "json_object"
    return "none"


def smallest_object(schema: dict[str, Any]) -> Any:
    """The smallest value ``schema`` allows: an enum's first value, empty strings, zeros, required keys only."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {key: smallest_object(properties.get(key, {})) for key in schema.get("required", [])}
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": []}.get(kind)


class _State:
    def __init__(self, delay: float, models: list[str] | None, structured: tuple[str, ...], refusal: Refusal) -> None:
        self.lock = threading.Lock()
        self.delay = delay
        self.models = models
        self.structured = structured
        self.refusal = refusal
        self.checks: list[RecordedCall] = []
        self.scripts: dict[str, deque[Fault]] = defaultdict(deque)
        self.replies: list[tuple[str, Reply]] = []
        self.calls: list[RecordedCall] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()

    def take_fault(self, prompt: str) -> Fault | None:
        with self.lock:
            for needle, faults in self.scripts.items():
                if needle in prompt and faults:
                    return faults.popleft()
        return None

    def reply(self, prompt: str, body: dict[str, Any], checking: bool) -> str:
        """The rule's reply to a run's prompt; else, and always to a check's, what a constrained model must say,
        or the echo."""
        with self.lock:
            rules = () if checking else reversed(self.replies)
            reply = next((reply for needle, reply in rules if needle in prompt), None)
        if reply is None:
            mode = structured_mode(body)
            if mode == "json_object":
                return "{}"
            if mode == "tool":
                return json.dumps(smallest_object(body["tools"][0]["input_schema"]))
            if mode != "none":
                form = body["response_format"]
                schema = form["json_schema"]["schema"] if mode == "json_schema" else form["schema"]
                return json.dumps(smallest_object(schema))
            return reply_text(prompt)
        return reply if isinstance(reply, str) else reply(prompt)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5
    server: QuietServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - signature of the base class
        """Quiet: the request log is ``FakeLLMServer.calls``."""

    def do_GET(self) -> None:  # noqa: N802 - name fixed by http.server
        state = self.server.state
        with state.lock:
            state.checks.append(RecordedCall(self.path, {}, {k.lower(): v for k, v in self.headers.items()},
                                             time.monotonic()))
        if self.path != "/v1/models" or state.models is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        self._send_json(200, {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "fake"}
                                                         for model in state.models]})

    def do_POST(self) -> None:  # noqa: N802 - name fixed by http.server
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        call = RecordedCall(self.path, body, {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
        with state.lock:
            (state.checks if prompt_of(body) in CHECK_PROMPTS else state.calls).append(call)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            self._answer(state, body)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, state: _State, body: dict[str, Any]) -> None:
        if self.path not in ("/v1/chat/completions", "/v1/completions", MESSAGES):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        prompt = prompt_of(body)
        checking = prompt in CHECK_PROMPTS
        fault = None if checking else state.take_fault(prompt)
        if fault is not None and fault.kind == "hang":
            state.stopping.wait(fault.seconds)
            self.close_connection = True
            return
        if fault is not None and fault.kind == "status":
            self._send_json(fault.status, self._error(fault.message, "scripted", fault.status), fault.headers)
            return
        if fault is not None and fault.kind == "echo_authorization":
            key = self.headers.get("Authorization") or self.headers.get("x-api-key")
            self._send_json(fault.status, self._error(f"Incorrect credentials provided: {key}", "invalid_request_error"))
            return
        if fault is not None and fault.kind == "malformed":
            self._send_json(200, {"id": "x", "object": "what", "unexpected": True})
            return
        if fault is not None and fault.kind == "garbage":
            self._send_bytes(200, b'{"choices": [{"text": "cut o', {"Content-Type": "application/json"})
            return
        if self.path != MESSAGES and structured_mode(body) not in (*state.structured, "none"):
            self._send_json(*state.refusal)
            return
        time.sleep(state.delay)
        text = fault.message if fault is not None and fault.kind == "text" else state.reply(prompt, body, checking)
        self._send_json(200, _completion(self.path, body, text))

    def _error(self, message: str, kind: str, code: int | None = None) -> dict[str, Any]:
        """An error body in the shape of the API asked (Anthropic's has a ``type`` of its own and no code)."""
        if self.path == MESSAGES:
            return {"type": "error", "error": {"type": kind, "message": message}}
        return {"error": {"message": message, "type": kind} | ({} if code is None else {"code": code})}

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), {"Content-Type": "application/json"} | (headers or {}))

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _completion(path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
    """A success body; token counts are whitespace word counts, easy to recompute in a test."""
    usage = {"prompt_tokens": len(prompt_of(body).split()), "completion_tokens": len(text.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if path == MESSAGES:
        if structured_mode(body) == "tool":
            block = {"type": "tool_use", "id": "toolu-fake", "name": body["tools"][0]["name"], "input": json.loads(text)}
        else:
            block = {"type": "text", "text": text}
        return {"id": "msg-fake", "type": "message", "role": "assistant", "model": body.get("model", ""),
                "content": [block], "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}}
    common = {"id": "cmpl-fake", "created": 0, "model": body.get("model", ""), "usage": usage}
    if path == "/v1/chat/completions":
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        return common | {"object": "chat.completion", "choices": [choice]}
    choice = {"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}
    return common | {"object": "text_completion", "choices": [choice]}


class FakeLLMServer(BackgroundServer):
    """Context manager: ``with FakeLLMServer(delay=0.05) as server: ... server.base_url``."""

    def __init__(self, *, delay: float = 0.0, lifetime: float = 60.0, models: list[str] | None = None,
                 structured: tuple[str, ...] = ("json_schema",), refusal: Refusal = REFUSED_FIELD) -> None:
        self._state = _State(delay, models, structured, refusal)
        super().__init__(QuietServer(self._state, _Handler), lifetime)

    def release(self) -> None:
        self._state.stopping.set()  # hanging handlers return

    @property
    def base_url(self) -> str:
        """What an OpenAI SDK client takes as ``base_url``."""
        return self.root_url + "/v1"

    def script(self, prompt_contains: str, *faults: Fault) -> None:
        """Answer the next requests whose prompt contains ``prompt_contains`` with ``faults``, then normally."""
        with self._state.lock:
            self._state.scripts[prompt_contains].extend(faults)

    def answer(self, prompt_contains: str, reply: Reply) -> None:
        """Reply to every request whose prompt contains ``prompt_contains`` with ``reply`` (or ``reply(prompt)``).

        Scripted faults still come first; of the rules that match, the last one given wins, so a test can
        give every prompt of a template a reply and then one prompt another.
        """
        with self._state.lock:
            self._state.replies.append((prompt_contains, reply))

    @property
    def calls(self) -> list[RecordedCall]:
        with self._state.lock:
            return list(self._state.calls)

    def takes(self, *structured: str) -> None:
        """From now on take these structured-output fields only (a server restarted with other flags)."""
        with self._state.lock:
            self._state.structured = structured

    @property
    def checks(self) -> list[RecordedCall]:
        """The requests of model checks: the model list and the check's prompts."""
        with self._state.lock:
            return list(self._state.checks)

    def calls_about(self, prompt_contains: str) -> list[RecordedCall]:
        return [call for call in self.calls if prompt_contains in prompt_of(call.body)]

    @property
    def max_in_flight(self) -> int:
        with self._state.lock:
            return self._state.max_in_flight


class SleepRecorder:
    """Stands in for ``asyncio.sleep`` in a client under test: remembers each requested wait, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class NoSleep:
    """Stands in for ``asyncio.sleep`` in a client under test: retries wait for nothing."""

    async def __call__(self, seconds: float) -> None:
        return None


def fake_client(wh: Warehouse, server: FakeLLMServer, **overrides: Any) -> LLMClient:
    """A client whose only model, ``fake``, is ``server`` (a chat model); retries are quick and never sleep."""
    from tasks.llm import LLMClient, ModelSpec, Registry
    from tasks.retry import RetryPolicy

    fields = {"name": "fake", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat",
              "max_concurrency": 4, "timeout": 10.0} | overrides
    return LLMClient(wh, Registry(models=(ModelSpec(**fields),), source="test"),
                     policy=RetryPolicy(attempts=3, initial_delay=0.01, max_delay=1.0, jitter=0.0), sleep=NoSleep())
