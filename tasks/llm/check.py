"""Can a registered model be used, and how: ``babelbench models check`` and the check every run makes first.

For an OpenAI-compatible endpoint the check asks the server, in order:

1. its model list (``GET /models``): reachable or not, and whether the
   entry's model id is among the ids it serves — a server that lists its
   models and not this one is a wrong id, whatever it would answer;
2. one tiny timed call on the entry's API (chat or completion): latency,
   tokens per second, whether usage is reported, and what it answers to a
   fixed prompt at temperature 0;
3. a one-token call on the other API, so the table says which it has;
4. the structured-output mode (:mod:`tasks.llm.structured`), learned by
   probing the ladder unless the home remembers it (:mod:`tasks.llm.endpoints`);
5. the context length, where the server says it (vLLM's ``max_model_len``,
   llama.cpp's ``/props``, LM Studio's and others' listing fields).

What the server said of the model it serves — its listing entry, llama.cpp's
model path, and its answer to the fixed prompt when two asks gave the same
answer — is remembered with the mode.  When a later check finds it changed,
another model now answers under the entry's name: the check fails, so that
no run mixes the two models' answers under one name, until the entry is
changed or the new model accepted (``--relearn``).

The check's own requests are neither budgeted nor cached: a handful of
one-line prompts.  Transient failures (429, 5xx, timeouts) are asked again
twice; refusals and refused connections are answers.  Other backends get
the timed call alone, through the backend itself; in-process baselines need
nothing.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import httpx
import orjson

from tasks.errors import ConfigError
from tasks.llm.backends import api_key, create_backend
from tasks.llm.endpoints import EndpointMemory, EndpointRecord, entry_digest, now_text
from tasks.llm.registry import IN_PROCESS_BACKENDS, ModelSpec
from tasks.llm.server_errors import ServerRefusal, connection_refused, refusal
from tasks.llm.structured import (
    DESCRIPTIONS,
    LADDER,
    PROBE,
    PROBE_PROMPT,
    GrammarUnavailableError,
    StructuredMode,
    follows_probe,
    request_fields,
)
from tasks.llm.types import ChatMessage, LLMError, LLMRequest

#: The fixed prompts of the timed call: a sequence any model continues, so the answer is long enough to time and,
#: at temperature 0, tells one model from another.
TIMED_CHAT = "Count from one to twenty in English words, separated by commas."
TIMED_COMPLETION = "one, two, three, four, five,"
TIMED_TOKENS = 16
#: The one-token call that asks whether the other API is there.
ROUTE_PROMPT = "Say OK."
#: The prompts the check sends, for tests that tell its traffic from a run's.
CHECK_PROMPTS = (TIMED_CHAT, TIMED_COMPLETION, ROUTE_PROMPT, PROBE_PROMPT)
CHECK_TIMEOUT_S = 60.0
ATTEMPTS = 3
#: Listing fields that change between two asks of the same server (vLLM stamps ``created`` and permission ids per
#: request), so they say nothing about which model answers.
_VOLATILE = ("created", "permission", "permissions")
#: Where servers put the context length in their model listing, best first.
_CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length", "n_ctx")


class ModelUnusableError(ConfigError):
    """A model failed its check before any of a run's calls were made: the run stops with the check's reason."""


class _Unreachable(Exception):
    """Nothing answered: a refused connection."""


class _Refused(Exception):
    def __init__(self, refused: ServerRefusal) -> None:
        self.refused = refused
        super().__init__(refused.describe())


class _Failed(Exception):
    """A transient failure that outlasted the attempts, or a reply that is not a completion."""


@dataclass(frozen=True)
class _Reply:
    text: str
    latency_s: float
    output_tokens: int | None  # None: the server reported no usage


@dataclass
class ModelCheck:
    """What the check found; :attr:`usable` and :attr:`reason` are its verdict."""

    name: str
    backend: str
    model: str
    mode: Literal["chat", "completion"]
    base_url: str | None = None
    reachable: bool | None = None  # None: in-process, nothing to reach
    served: list[str] | None = None  # the ids the server lists; None when it lists none
    listed: bool | None = None
    apis: dict[str, str] = field(default_factory=dict)  # chat / completion -> "yes" or why not
    structured: StructuredMode | None = None
    structured_source: str | None = None  # "learned now" | "remembered <date>"
    refused: dict[str, str] = field(default_factory=dict)  # rung -> why it was not taken
    latency_s: float | None = None
    output_tokens: int | None = None
    tokens_per_s: float | None = None
    usage_reported: bool | None = None
    context_length: int | None = None
    context_source: str | None = None
    price_in: float = 0.0
    price_out: float = 0.0
    warnings: list[str] = field(default_factory=list)
    usable: bool = False
    reason: str | None = None

    def fail(self, reason: str) -> ModelCheck:
        self.usable, self.reason = False, reason
        return self

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def rows(self) -> list[tuple[str, str]]:
        """The table ``models check`` prints: (what, found)."""
        rows = [("model", f"{self.name}: {self.backend} {self.mode} model {self.model!r}"
                 + (f" at {self.base_url}" if self.base_url else ""))]
        if self.reachable is None:
            rows.append(("reachable", "in-process: nothing to reach"))
        else:
            rows.append(("reachable", "yes" if self.reachable else "no"))
        if self.served is not None or self.listed is not None:
            listing = ", ".join(self.served or []) or "none"
            rows.append(("listed", f"{'yes' if self.listed else 'NO'} (the server lists: {listing})"
                         if self.served is not None else "the server has no model list"))
        if self.apis:
            rows.append(("APIs", "; ".join(f"{api}: {state}" for api, state in self.apis.items())))
        if self.structured is not None:
            rows.append(("structured output", f"{self.structured} — {DESCRIPTIONS[self.structured]}"
                         + (f" ({self.structured_source})" if self.structured_source else "")))
            rows += [("", f"{rung} not taken: {why}") for rung, why in self.refused.items()]
        if self.latency_s is not None:
            speed = f", {self.tokens_per_s:.1f} tokens/s" if self.tokens_per_s is not None else ""
            tokens = f"{self.output_tokens} tokens" if self.output_tokens is not None else "tokens not reported"
            rows.append(("test call", f"{self.latency_s:.2f} s, {tokens}{speed}"))
        if self.usage_reported is not None:
            rows.append(("usage", "reported" if self.usage_reported
                         else "not reported: budgets count estimated tokens"))
        if self.reachable is not None:
            rows.append(("context length", f"{self.context_length} tokens ({self.context_source})"
                         if self.context_length else "not said by the server"))
        prices = (f"{self.price_in:g} in, {self.price_out:g} out (USD per 1M tokens)"
                  if self.price_in or self.price_out else "none configured: the model's calls cost $0 in budgets")
        rows.append(("prices", prices))
        rows += [("warning", text) for text in self.warnings]
        rows.append(("verdict", "usable" if self.usable else f"NOT usable: {self.reason}"))
        return rows


def check_model(spec: ModelSpec, memory: EndpointMemory, *, relearn: bool = False) -> ModelCheck:
    """The check of ``spec`` (see the module notes), from synchronous code."""
    return asyncio.run(acheck_model(spec, memory, relearn=relearn))


async def acheck_model(spec: ModelSpec, memory: EndpointMemory, *, relearn: bool = False) -> ModelCheck:
    """The check of ``spec``: remembered modes are used and what changed is remembered, unless ``relearn``."""
    check = ModelCheck(spec.name, spec.backend, spec.model, spec.mode, base_url=spec.base_url,
                       price_in=spec.price_in, price_out=spec.price_out)
    if spec.backend == "openai":
        return await _EndpointCheck(spec, memory, check).run(relearn)
    if spec.backend == "baseline":
        check.usable = True
        return check
    return await _backend_check(spec, check)


async def _backend_check(spec: ModelSpec, check: ModelCheck) -> ModelCheck:
    """A model behind another backend: one timed call through the backend itself."""
    check.reachable = None if spec.backend in IN_PROCESS_BACKENDS else False
    request = _timed_request(spec)
    try:
        backend = await asyncio.to_thread(create_backend, spec)
    except ConfigError as exc:
        return check.fail(str(exc))
    try:
        response = await backend.complete(request)
    except LLMError as exc:
        return check.fail(f"the test call failed: {exc}")
    finally:
        await backend.aclose()
    if check.reachable is not None:
        check.reachable = True
    check.latency_s, check.output_tokens = response.latency_s, response.output_tokens
    check.tokens_per_s = response.output_tokens / response.latency_s if response.latency_s > 0 else None
    check.usage_reported = True
    check.usable = True
    return check


def _timed_request(spec: ModelSpec) -> LLMRequest:
    if spec.mode == "chat":
        return LLMRequest(messages=(ChatMessage(role="user", content=TIMED_CHAT),), max_tokens=TIMED_TOKENS, seed=0)
    return LLMRequest(prompt=TIMED_COMPLETION, max_tokens=TIMED_TOKENS, seed=0)


class _EndpointCheck:
    """One check of an OpenAI-compatible endpoint, with the HTTP client it runs on."""

    def __init__(self, spec: ModelSpec, memory: EndpointMemory, check: ModelCheck) -> None:
        import openai

        self.spec, self.memory, self.check = spec, memory, check
        self.openai = openai
        self.client = openai.AsyncOpenAI(base_url=spec.base_url, api_key=api_key(spec), max_retries=0,
                                         timeout=min(spec.timeout, CHECK_TIMEOUT_S))

    async def run(self, relearn: bool) -> ModelCheck:
        try:
            return await self._run(relearn)
        except _Unreachable as exc:
            self.check.reachable = False
            return self.check.fail(f"nothing answers at {self.client.base_url} ({exc}); is the server running?")
        except _Failed as exc:
            return self.check.fail(f"the server failed the check: {exc}; try again when it answers")
        finally:
            await self.client.close()

    async def _run(self, relearn: bool) -> ModelCheck:
        spec, check = self.spec, self.check
        listing = await self._listing()
        check.reachable = True
        item = self._listed(listing)
        if check.listed is False:
            return check.fail(f"the server does not serve model {spec.model!r} (it lists: {', '.join(check.served or [])});"
                              f" set the entry's model to one of those (babelbench models edit {spec.name} --model ID)")
        props = await self._props()
        check.context_length, check.context_source = _context(item, props)
        try:
            first = await self._call(spec.mode, {}, timed=True)
        except _Refused as exc:
            check.apis[spec.mode] = f"refused ({exc})"
            other = await self._api_state("completion" if spec.mode == "chat" else "chat")
            hint = f"; the {other[0]} API answers: set mode: {other[0]}" if other[1] == "yes" else ""
            return check.fail(f"the server refused the test call on the {spec.mode} API: {exc}{hint}")
        check.apis[spec.mode] = "yes"
        api, state = await self._api_state("completion" if spec.mode == "chat" else "chat")
        check.apis[api] = state
        check.latency_s = first.latency_s
        check.usage_reported = first.output_tokens is not None
        check.output_tokens = first.output_tokens
        if first.output_tokens and first.latency_s > 0:
            check.tokens_per_s = first.output_tokens / first.latency_s
        if not first.text.strip():
            check.warnings.append(f"the test call's reply was empty: on the {spec.mode} API this model may say"
                                  " nothing (a base model behind a chat template?); "
                                  + ("try mode: completion" if spec.mode == "chat" else "check the server's log"))
        remembered = None if relearn else self.memory.get(spec)
        served = {"listing": _stable(item), "model_path": props.get("model_path") if props else None}
        if remembered is not None:
            changed = _changed(remembered.served, served | {"answer": first.text})
            if changed:
                return check.fail(
                    f"another model now answers at {spec.base_url} under {spec.model!r}: {changed}. Its answers would"
                    f" mix with the earlier model's under the name {spec.name!r}: register it under a new name or"
                    f" model id (babelbench models add / models edit {spec.name} --model ID), or accept it with"
                    f" babelbench models check {spec.name} --relearn")
            record = remembered
            check.structured_source = f"remembered from {remembered.learned_at}"
        else:
            again = await self._call(spec.mode, {}, timed=True)
            if again.text == first.text and first.text.strip():
                served["answer"] = first.text  # answers alike twice at temperature 0: it tells this model apart
            record = await self._learn(served)
            self.memory.put(spec, record)
            check.structured_source = "learned now"
        check.structured, check.refused = record.structured, dict(record.refused)
        if record.structured == "none":
            check.warnings.append("the server took no structured-output field: judges' replies are read by the"
                                  " strict reader alone, and unclear ones count as judge_failed")
        check.usable = True
        return check

    async def _learn(self, served: dict[str, Any]) -> EndpointRecord:
        """The first rung of the ladder this endpoint takes, with why each one above it was not."""
        refused: dict[str, str] = {}
        taken: StructuredMode = "none"
        for mode in LADDER[:-1]:
            try:
                fields = request_fields(mode, PROBE)
            except GrammarUnavailableError as exc:
                refused[mode] = str(exc)
                continue
            try:
                reply = await self._call(self.spec.mode, fields, probe=True)
            except _Refused as exc:
                refused[mode] = f"refused: {exc}"
                continue
            if follows_probe(mode, reply.text):
                taken = mode
                break
            refused[mode] = f"accepted, but the reply did not follow the schema: {reply.text[:80]!r}"
        return EndpointRecord(base_url=self.spec.base_url or "default", model=self.spec.model, api=self.spec.mode,
                              entry=entry_digest(self.spec), structured=taken, refused=refused,
                              served={key: value for key, value in served.items() if value is not None},
                              learned_at=now_text())

    async def _api_state(self, api: Literal["chat", "completion"]) -> tuple[str, str]:
        """Whether the other API answers a one-token call: ``yes`` or why not."""
        try:
            await self._call(api, {}, max_tokens=1)
        except (_Refused, _Failed) as exc:
            return api, f"no ({exc})"
        return api, "yes"

    async def _listing(self) -> list[dict[str, Any]] | None:
        """The server's model list; None when it has none (404, or a body that is not a list)."""
        try:
            raw = await self._send(self.client.models.with_raw_response.list)
        except _Refused as exc:
            if exc.refused.status in (401, 403):
                self.check.reachable = True
                raise _Failed(f"the server refused the key: {exc}") from None
            return None
        data = raw.get("data") if isinstance(raw, dict) else None
        return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else None

    def _listed(self, listing: list[dict[str, Any]] | None) -> dict[str, Any] | None:
        """The listing's entry for the model; sets ``served`` and ``listed`` (Ollama's ``:latest`` is the same id)."""
        if listing is None:
            return None
        self.check.served = [str(item.get("id")) for item in listing]
        wanted = {self.spec.model, f"{self.spec.model}:latest"}
        item = next((item for item in listing if item.get("id") in wanted), None)
        self.check.listed = item is not None or not listing
        return item

    async def _props(self) -> dict[str, Any] | None:
        """llama.cpp server's ``/props`` (beside ``/v1``): its context size and model path; None elsewhere."""
        root = str(self.client.base_url).rstrip("/").removesuffix("/v1")
        try:
            async with httpx.AsyncClient(timeout=5.0) as http:
                answer = await http.get(f"{root}/props")
            body = answer.json() if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    async def _call(self, api: Literal["chat", "completion"], fields: dict[str, Any], *, timed: bool = False,
                    probe: bool = False, max_tokens: int = TIMED_TOKENS) -> _Reply:
        """One request on ``api`` with ``fields`` added; the prompt is the probe's, the timed one's or the route's."""
        params: dict[str, Any] = {"model": self.spec.model, "max_tokens": 48 if probe else max_tokens,
                                  "temperature": 0.0, "seed": 0}
        if fields:
            params["extra_body"] = fields  # the SDK's completions take no response_format, and none takes a grammar
        text = PROBE_PROMPT if probe else (TIMED_CHAT if api == "chat" else TIMED_COMPLETION) if timed else ROUTE_PROMPT
        started = time.perf_counter()
        if api == "chat":
            body = await self._send(self.client.chat.completions.with_raw_response.create,
                                    messages=[{"role": "user", "content": text}], **params)
        else:
            body = await self._send(self.client.completions.with_raw_response.create, prompt=text, **params)
        latency = time.perf_counter() - started
        try:
            choice = body["choices"][0]
            reply = choice["message"]["content"] if api == "chat" else choice["text"]
        except (KeyError, IndexError, TypeError):
            raise _Failed(f"the {api} reply is not a completion: {str(body)[:200]}") from None
        usage = body.get("usage") if isinstance(body, dict) else None
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return _Reply(reply or "", latency, tokens if isinstance(tokens, int) else None)

    async def _send(self, create: Any, **params: Any) -> Any:
        """The parsed body of one request; transient failures asked again, up to :data:`ATTEMPTS` in all."""
        openai = self.openai
        failure = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                await asyncio.sleep(0.5 * 2 ** attempt)
            try:
                raw = await create(**params)
                return orjson.loads(raw.content)
            except openai.APIStatusError as exc:
                refused = refusal(exc.status_code, exc.body, exc.response.text)
                if refused is not None:
                    raise _Refused(refused) from None
                failure = f"HTTP {exc.status_code}: {exc.message}"
            except openai.APITimeoutError:
                failure = f"no answer within {self.client.timeout} s"
            except openai.APIConnectionError as exc:
                if connection_refused(exc):
                    raise _Unreachable(str(exc.__cause__ or exc)) from None
                failure = f"connection failed: {exc.__cause__ or exc}"
            except orjson.JSONDecodeError:
                failure = "the reply is not JSON"
        raise _Failed(failure)


def _stable(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """A listing entry without the fields that change per request."""
    return None if item is None else {key: value for key, value in item.items() if key not in _VOLATILE}


def _changed(before: dict[str, Any], now: dict[str, Any]) -> str | None:
    """What the server says differently of the model it serves, in words; None when nothing changed."""
    labels = {"listing": "its model-list entry", "model_path": "its model file", "answer": "its answer to the fixed"
              " test prompt at temperature 0"}
    for key, label in labels.items():
        if before.get(key) is not None and now.get(key) is not None and before[key] != now[key]:
            return f"{label} was {_short(before[key])}, now {_short(now[key])}"
    return None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return repr(text if len(text) <= 80 else text[:77] + "…")


def _context(item: dict[str, Any] | None, props: dict[str, Any] | None) -> tuple[int | None, str | None]:
    """The context length the server states, and where it said it."""
    settings = props.get("default_generation_settings") if props else None
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        return settings["n_ctx"], "the server's /props"
    for key in _CONTEXT_FIELDS:
        value = item.get(key) if item else None
        if isinstance(value, int) and value > 0:
            return value, f"{key} in its model list"
    meta = item.get("meta") if item else None
    if isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
        return meta["n_ctx_train"], "the model's training context, in its model list"
    return None, None
