"""What an OpenAI-compatible server's error says: its own words, the request field it names, whether it is a
validation error.

Servers refuse a request in many shapes: OpenAI puts the field in
``error.param``; FastAPI apps (llama-cpp-python, LM Studio's proxy, many
gateways) answer 422 with pydantic's ``detail`` list and its ``loc`` path,
or let the validation error escape as a **500** whose message is pydantic's
text (``1 validation error: {'type': 'literal_error', 'loc': ('body',
'response_format', 'type'), …}``); vLLM, Ollama and TGI write a sentence.
A 500 of that kind is a refusal, not an outage: the same request is refused
again, so it must not be retried with backoff (see :mod:`tasks.llm.client`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import httpx
import regex

from tasks.llm.structured import about_structure

#: Statuses a live server answers when the request itself is at fault; 408, 425 and 429 are about timing instead.
_TIMING = frozenset({408, 425, 429})
#: Words pydantic, FastAPI and the servers' own validators use when they reject a field's value.
_VALIDATION_MARKERS = ("validation error", "'loc':", '"loc":', "input should be", "field required",
                       "extra inputs are not permitted", "literal_error", "unprocessable")
#: A pydantic ``loc`` tuple as it appears in an error's text: ``'loc': ('body', 'response_format', 'type')``.
_LOC_IN_TEXT = regex.compile(r"""['"]loc['"]\s*:\s*[\(\[]([^\)\]]*)[\)\]]""")
#: Request fields a sentence may name, the longer names first so ``response_format`` wins over ``format``.
_FIELDS = ("response_format", "json_schema", "grammar", "guided_json", "max_completion_tokens", "max_tokens",
           "temperature", "messages", "logprobs", "tool_choice", "tools", "prompt", "model", "seed", "stop")
_FIELD_IN_TEXT = regex.compile(r"(?<![\w.])(" + "|".join(_FIELDS) + r")((?:\.\w+)*)(?!\w)")
WORDS_CHARS = 300


@dataclass(frozen=True)
class ServerRefusal:
    """How a server refused one request: the HTTP status, its words (shortened) and the field it named, if any."""

    status: int
    words: str
    field: str | None

    def describe(self) -> str:
        """``HTTP 500: field response_format.type refused: Input should be …`` — what a log line or a row says."""
        named = f"field {self.field} refused: " if self.field else ""
        return f"HTTP {self.status}: {named}{self.words}"


def refusal(status: int, body: object, text: str) -> ServerRefusal | None:
    """The refusal an error response holds; None when it is a transient failure to retry (429, 5xx without a
    validation error in its body).

    ``body`` is the parsed JSON body (None when it was not JSON) and ``text`` the raw one.
    """
    words = server_words(body, text)
    if status in _TIMING or status < 400:
        return None
    if status >= 500 and not is_validation_error(words):
        return None
    return ServerRefusal(status, _gist(words), named_field(body, words))


def _gist(words: str) -> str:
    """The words on one line, without a traceback the server appended, at most :data:`WORDS_CHARS` long."""
    words = words.split("\n\n")[0] if "Traceback" in words or 'File "' in words else words
    words = " ".join(words.split())
    return words if len(words) <= WORDS_CHARS else words[:WORDS_CHARS - 1] + "…"


def server_words(body: object, text: str) -> str:
    """The server's own message, wherever its error shape keeps it; the raw text otherwise."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"].strip()
        for key in ("error", "message", "detail"):
            value = body.get(key)
            if isinstance(value, str):
                return value.strip()
        detail = body.get("detail")
        if isinstance(detail, list) and detail:
            return "; ".join(_pydantic_item(item) for item in detail)
    return text.strip()


def _pydantic_item(item: Any) -> str:
    """One entry of FastAPI's 422 ``detail`` list as ``body.response_format.type: Input should be …``."""
    if not isinstance(item, dict):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc") or ())
    return f"{where}: {item.get('msg', '')}".strip(": ")


def named_field(body: object, words: str) -> str | None:
    """The request field the refusal is about: OpenAI's ``param``, pydantic's ``loc`` path (without its leading
    ``body``), or the first request field the message names."""
    if isinstance(body, dict):
        error = body.get("error")
        param = error.get("param") if isinstance(error, dict) else body.get("param")
        if isinstance(param, str) and param:
            return param
        detail = body.get("detail")
        if isinstance(detail, list) and detail and isinstance(detail[0], dict) and detail[0].get("loc"):
            return _path(detail[0]["loc"])
    match = _LOC_IN_TEXT.search(words)
    if match:
        try:
            parts = ast.literal_eval(f"({match.group(1)},)")
        except (ValueError, SyntaxError):
            parts = ()
        if parts:
            return _path(parts)
    mention = _FIELD_IN_TEXT.search(words)
    return mention.group(1) + mention.group(2) if mention else None


def _path(parts: Any) -> str | None:
    names = [str(part) for part in parts]
    if names and names[0] == "body":
        names = names[1:]
    return ".".join(names) or None


def is_validation_error(words: str) -> bool:
    """Whether a message reads as a rejected field (pydantic's, FastAPI's or OpenAI's wording)."""
    lowered = words.casefold()
    return any(marker in lowered for marker in _VALIDATION_MARKERS)


def connection_refused(error: BaseException) -> bool:
    """Whether ``error`` comes from a connection that could not be opened (nothing listens, the host cannot be
    reached), as opposed to a server that answered or hung up.

    SDKs raise their own error from the HTTP client's, keeping it (and the OS
    error under it) as the cause: the chain says what the message cannot.
    """
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, (httpx.ConnectError, ConnectionRefusedError)):
            return True
        pending += [current.__cause__, current.__context__]
    return False


def refuses_structure(refused: ServerRefusal) -> bool:
    """Whether a refusal is about the way structured output was asked for (the field it names, or its words)."""
    words = refused.words.casefold()
    return about_structure(refused.field) or any(word in words for word in ("schema", "json", "grammar",
                                                                             "response format", "response_format"))
