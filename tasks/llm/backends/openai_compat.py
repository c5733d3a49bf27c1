"""Any OpenAI-compatible endpoint through the official SDK: OpenAI, vLLM, Ollama, llama.cpp server, TGI …

The SDK's own retries are off (``max_retries=0``): the client retries, the
same way for every backend, and records every attempt's outcome.

A chat request with a response format is sent with a JSON-schema
``response_format``; a server that refuses the field (HTTP 400 naming it) is
asked again without it, and from then on this model's requests go without
it — the verdict reader still reads an unconstrained reply.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import openai
import orjson

from tasks.llm.backends import api_key, sdk_error
from tasks.llm.budget import CHARS_PER_TOKEN, estimated_input_tokens
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse, MalformedResponseError

log = logging.getLogger(__name__)


class OpenAICompatBackend:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._client = openai.AsyncOpenAI(base_url=spec.base_url, api_key=api_key(spec), max_retries=0, timeout=spec.timeout)
        self._schemas = True  # until the server refuses response_format

    async def complete(self, request: LLMRequest) -> LLMResponse:
        params: dict[str, Any] = {"model": self.spec.model, "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.stop is not None:
            params["stop"] = list(request.stop)
        if request.seed is not None:
            params["seed"] = request.seed
        started = time.perf_counter()
        try:
            if request.messages is not None:
                messages = [m.model_dump() for m in request.messages]
                reply = await self._chat(messages, params, request)
            else:
                reply = await self._client.completions.with_raw_response.create(prompt=request.prompt, **params)
        except Exception as exc:
            error = sdk_error(openai, self.spec, exc)
            if error is None:
                raise
            raise error from None  # the SDK's exception holds the provider's raw text, which may echo the key
        return self._response(reply.content, request, time.perf_counter() - started)

    async def _chat(self, messages: list[dict[str, Any]], params: dict[str, Any], request: LLMRequest) -> Any:
        create = self._client.chat.completions.with_raw_response.create
        if request.response_format is None or not self._schemas:
            return await create(messages=messages, **params)
        schema = {"name": request.response_format.name, "schema": request.response_format.json_schema, "strict": True}
        try:
            return await create(messages=messages, response_format={"type": "json_schema", "json_schema": schema},
                                **params)
        except openai.BadRequestError as exc:
            if "response_format" not in str(exc) and "json_schema" not in str(exc):
                raise
            self._schemas = False
            log.warning("model %r: the server refused a JSON-schema response_format; its replies are read"
                        " unconstrained from now on", self.spec.name)
            return await create(messages=messages, **params)

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
