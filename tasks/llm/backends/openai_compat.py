"""Any OpenAI-compatible endpoint through the official SDK: OpenAI, vLLM, Ollama, llama.cpp server, TGI …

The SDK's own retries are off (``max_retries=0``): the client retries, the
same way for every backend, and records every attempt's outcome.

A request with a response format asks for it the way the endpoint takes
(its :class:`~tasks.llm.endpoints.Negotiation`, which the client hands over
after the model's check): a JSON-schema ``response_format``, a JSON-object
one carrying the schema, a llama.cpp grammar, a bare JSON object, or
nothing.  A call refused for that field is sent again at once by the next way
down, which is remembered; the verdict reader still reads what comes back.
"""

from __future__ import annotations

import time
from typing import Any

import openai
import orjson

from tasks.llm.backends import api_key, sdk_error
from tasks.llm.budget import CHARS_PER_TOKEN, estimated_input_tokens
from tasks.llm.endpoints import Negotiation
from tasks.llm.registry import ModelSpec
from tasks.llm.server_errors import refusal, refuses_structure
from tasks.llm.structured import GrammarUnavailableError, request_fields
from tasks.llm.types import LLMRequest, LLMResponse, MalformedResponseError, ResponseFormat


class OpenAICompatBackend:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._client = openai.AsyncOpenAI(base_url=spec.base_url, api_key=api_key(spec), max_retries=0, timeout=spec.timeout)
        #: the ladder from its top until the client hands over the model's learned mode (:meth:`use`)
        self.negotiation = Negotiation(spec, None, None)

    def use(self, negotiation: Negotiation) -> None:
        """Ask for structured output the way ``negotiation`` says, stepping down with it."""
        self.negotiation = negotiation

    async def complete(self, request: LLMRequest) -> LLMResponse:
        params: dict[str, Any] = {"model": self.spec.model, "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.stop is not None:
            params["stop"] = list(request.stop)
        if request.seed is not None:
            params["seed"] = request.seed
        if request.messages is not None:
            params["messages"] = [m.model_dump() for m in request.messages]
            create = self._client.chat.completions.with_raw_response.create
        else:
            params["prompt"] = request.prompt
            create = self._client.completions.with_raw_response.create
        started = time.perf_counter()
        try:
            reply = await self._structured(create, params, request.response_format)
        except Exception as exc:
            error = sdk_error(openai, self.spec, exc)
            if error is None:
                raise
            raise error from None  # the SDK's exception holds the provider's raw text, which may echo the key
        return self._response(reply.content, request, time.perf_counter() - started)

    async def _structured(self, create: Any, params: dict[str, Any], response_format: ResponseFormat | None) -> Any:
        """The call, asking for ``response_format`` by the negotiated mode; a refusal of that field steps down."""
        if response_format is None:
            return await create(**params)
        while True:
            mode = self.negotiation.mode
            try:
                fields = request_fields(mode, response_format)
            except GrammarUnavailableError as exc:
                self.negotiation.refused(mode, str(exc))
                continue
            try:
                # as body fields: the SDK's completions take no response_format, and neither API a grammar
                return await create(**params, **({"extra_body": fields} if fields else {}))
            except openai.APIStatusError as exc:
                refused = refusal(exc.status_code, exc.body, exc.response.text)
                if refused is None or mode == "none" or not refuses_structure(refused):
                    raise
                if self.negotiation.refused(mode, refused.describe()) is None:
                    raise

    def _response(self, body: bytes, request: LLMRequest, latency: float) -> LLMResponse:
        """The parts we need, read from the JSON body and checked to exist.

        The SDK's typed objects are skipped (``with_raw_response``): building them cost a few percent of the
        throughput at 16 requests in flight, and they are not validated anyway.
        """
        try:
            result = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise MalformedResponseError(f"model {self.spec.name!r}: the response is not JSON: {body[:200]!r}") from None
        choices = result.get("choices") if isinstance(result, dict) else None
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise MalformedResponseError(f"model {self.spec.name!r}: the response has no choices: {str(result)[:200]}")
        choice = choices[0]
        if request.messages is not None:
            message = choice.get("message")
            text = message.get("content") if isinstance(message, dict) else None
        else:
            text = choice.get("text")
        if text is None and choice.get("finish_reason") is None:
            raise MalformedResponseError(f"model {self.spec.name!r}: the first choice has no text: {str(choice)[:200]}")
        if not isinstance(text, str | None):
            raise MalformedResponseError(f"model {self.spec.name!r}: the first choice's text is not a string: "
                                         f"{str(choice)[:200]}")
        text = text or ""
        raw = {"id": result.get("id"), "model": result.get("model"),
               "system_fingerprint": result.get("system_fingerprint")}
        usage = result.get("usage")
        input_tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        output_tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        if not isinstance(input_tokens, int) or not isinstance(output_tokens, int):
            # a few compatible servers omit usage; budgets still need a number
            input_tokens = estimated_input_tokens(request)
            output_tokens = -(-len(text) // CHARS_PER_TOKEN)
            raw["usage_estimated"] = True
        return LLMResponse(text, input_tokens, output_tokens, choice.get("finish_reason"), latency, raw)

    async def aclose(self) -> None:
        await self._client.close()
