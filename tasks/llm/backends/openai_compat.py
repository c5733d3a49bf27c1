"""Any OpenAI-compatible endpoint through the official SDK: OpenAI, vLLM, Ollama, llama.cpp server, TGI …

The SDK's own retries are off (``max_retries=0``): the client retries, the
same way for every backend, and records every attempt's outcome.
"""

from __future__ import annotations

import time
from typing import Any

import openai

from tasks.llm.backends import api_key, sdk_error
from tasks.llm.budget import CHARS_PER_TOKEN, estimated_input_tokens
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse, MalformedResponseError


class OpenAICompatBackend:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._client = openai.AsyncOpenAI(base_url=spec.base_url, api_key=api_key(spec), max_retries=0, timeout=spec.timeout)

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
                result: Any = await self._client.chat.completions.create(messages=messages, **params)
            else:
                result = await self._client.completions.create(prompt=request.prompt, **params)
        except Exception as exc:
            error = sdk_error(openai, self.spec, exc)
            if error is None:
                raise
            raise error from None  # the SDK's exception holds the provider's raw text, which may echo the key
        return self._response(result, request, time.perf_counter() - started)

    def _response(self, result: Any, request: LLMRequest, latency: float) -> LLMResponse:
        """Check the parts we need exist: the SDK builds its objects without validating them."""
        choices = getattr(result, "choices", None)
        if not choices:
            raise MalformedResponseError(f"model {self.spec.name!r}: the response has no choices: {str(result)[:200]}")
        choice = choices[0]
        if request.messages is not None:
            message = getattr(choice, "message", None)
            text = getattr(message, "content", None)
        else:
            text = getattr(choice, "text", None)
        if text is None and getattr(choice, "finish_reason", None) is None:
            raise MalformedResponseError(f"model {self.spec.name!r}: the first choice has no text: {str(choice)[:200]}")
        text = text or ""
        raw = {"id": getattr(result, "id", None), "model": getattr(result, "model", None),
               "system_fingerprint": getattr(result, "system_fingerprint", None)}
        usage = getattr(result, "usage", None)
        input_tokens = getattr(usage, "prompt_tokens", None)
        output_tokens = getattr(usage, "completion_tokens", None)
        if not isinstance(input_tokens, int) or not isinstance(output_tokens, int):
            # a few compatible servers omit usage; budgets still need a number
            input_tokens = estimated_input_tokens(request)
            output_tokens = -(-len(text) // CHARS_PER_TOKEN)
            raw["usage_estimated"] = True
        return LLMResponse(text, input_tokens, output_tokens, getattr(choice, "finish_reason", None), latency, raw)

    async def aclose(self) -> None:
        await self._client.close()
