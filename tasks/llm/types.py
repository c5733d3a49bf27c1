"""What goes into a model call, what comes out, and how a call can fail.

The error classes split failures by what a caller should do about them:
transient ones (rate limits, 5xx, timeouts, dropped connections) are retried
with backoff; permanent ones (bad request, auth, unknown model) fail the item
at once with a message saying what to fix; a malformed reply (a 200 whose body
does not parse or lacks the answer) is retried like a transient error, because
in practice it comes from flaky proxies and truncated bodies, and is recorded
as malformed when it persists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.errors import BabelbenchError
from tasks.llm.redact import redact

Status = Literal["ok", "cached", "failed", "skipped_budget"]


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class ResponseFormat(BaseModel):
    """A JSON schema the reply must follow, for backends that can constrain output (judges' verdicts).

    The schema is kept as canonical JSON text so that a request stays hashable and its cache key stable.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    schema_text: str

    @classmethod
    def of(cls, name: str, schema: dict[str, Any]) -> ResponseFormat:
        return cls(name=name, schema_text=json.dumps(schema, separators=(",", ":")))

    @property
    def json_schema(self) -> dict[str, Any]:
        return json.loads(self.schema_text)


class LLMRequest(BaseModel):
    """One call: ``messages`` for chat models, ``prompt`` for completion models, never both.

    Every field takes part in the cache key, so two requests that differ only
    in ``seed`` are two calls — vary the seed to draw several samples of one
    prompt at a temperature above zero.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[ChatMessage, ...] | None = None
    prompt: str | None = None
    max_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    stop: tuple[str, ...] | None = None
    seed: int | None = None
    response_format: ResponseFormat | None = None  # the reply as a JSON object of this schema, where the backend can

    @model_validator(mode="after")
    def _one_input(self) -> LLMRequest:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give exactly one of `messages` (chat models) or `prompt` (completion models)")
        if self.messages is not None and not self.messages:
            raise ValueError("`messages` is empty")
        return self

    @property
    def mode(self) -> Literal["chat", "completion"]:
        return "chat" if self.messages is not None else "completion"

    @property
    def input_chars(self) -> int:
        if self.messages is not None:
            return sum(len(m.content) for m in self.messages)
        return len(self.prompt or "")

    @property
    def prompt_text(self) -> str:
        """What the model reads: the completion prompt, or the chat messages' contents in order."""
        if self.messages is not None:
            return "\n".join(m.content for m in self.messages)
        return self.prompt or ""


@dataclass(frozen=True)
class LLMResponse:
    """A model's answer; ``raw`` keeps a few small provider fields (id, model, usage), never the prompt."""

    text: str
    input_tokens: int
    output_tokens: int
    finish_reason: str | None
    latency_s: float
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallResult:
    """The outcome of one request of a batch, in the batch's order.

    ``ok``: called now; ``cached``: served from the warehouse without a call;
    ``failed``: ``error`` says why (after retries, for transient errors);
    ``skipped_budget``: not called, or not retried, because the budget would
    have been exceeded (``error`` then says what the attempts made got).

    ``response.text`` is the raw reply, as stored; :attr:`answer` is what
    readers parse.
    """

    status: Status
    request_hash: str
    response: LLMResponse | None = None
    error: str | None = None
    cost_usd: float = 0.0
    attempts: int = 0
    answer_start: int = 0  # where the model's own answer starts in response.text, past any echo of the prompt

    @property
    def answer(self) -> str:
        """The model's own answer: the reply past any echo of its prompt (see :func:`tasks.llm.parsing.echo_end`)."""
        return self.response.text[self.answer_start:] if self.response is not None else ""


class LLMError(BabelbenchError):
    """A model call failed; the subclass says whether retrying can help.

    The message is redacted as the error is made (:mod:`tasks.llm.redact`): it
    carries the provider's text, which may echo the API key, and it is stored
    in ``llm_calls`` and items' reasons and logged on every retry.
    """

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class TransientLLMError(LLMError):
    """Rate limited, overloaded, timed out or disconnected: a later attempt may succeed.

    ``retry_after`` is the server's own hint in seconds, when it gave one.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class PermanentLLMError(LLMError):
    """Bad request, auth, unknown model, prompt too long: retrying cannot help."""


class RefusedRequestError(PermanentLLMError):
    """The server answered and refused the request for what it holds (HTTP 400, 404, 422, or a 500 whose body is a
    validation error): sent again unchanged it is refused again, so it is never retried with backoff.

    ``field`` is the request field the server named (``response_format.type``), when it named one; the client counts
    identical refusals (:attr:`signature`) to stop a model whose every request is refused the same way.
    """

    def __init__(self, message: str, *, status: int, field: str | None) -> None:
        self.status = status
        self.field = field
        super().__init__(message)

    @property
    def signature(self) -> str:
        """What makes two refusals the same: the status and the server's words (numbers included, so prompts
        refused for their own lengths differ)."""
        return f"{self.status} {self}"


class MalformedResponseError(LLMError):
    """A success status whose body does not parse or has no answer in it."""
