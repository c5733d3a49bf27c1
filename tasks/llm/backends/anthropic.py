"""Anthropic's Messages API through the official SDK, an optional dependency.

Chat only.  System messages go into the API's separate ``system`` field.  The
Messages API of the SDK this was written against (anthropic 2.12) takes no
``temperature`` and no ``seed``: both are not sent and only distinguish cache
entries.  A request with a response format is asked to call one tool whose
input schema is that format; the tool's input, as JSON, is the reply.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tasks.llm.backends import api_key, require_sdk, sdk_error
from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse, MalformedResponseError


class AnthropicBackend:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self._sdk = require_sdk("anthropic", "pip install anthropic (optional; only Anthropic-hosted models need it)")
        self._client = self._sdk.AsyncAnthropic(base_url=spec.base_url, api_key=api_key(spec), max_retries=0, timeout=spec.timeout)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        messages = request.messages or ()
        params: dict[str, Any] = {
            "model": self.spec.model,
            "max_tokens": request.max_tokens,
            "messages": [m.model_dump() for m in messages if m.role != "system"],
        }
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        if system:
            params["system"] = system
        if request.stop is not None:
            params["stop_sequences"] = list(request.stop)
        if request.response_format is not None:
            name = request.response_format.name
            params["tools"] = [{"name": name, "description": "Record your verdict.",
                                "input_schema": request.response_format.json_schema}]
            params["tool_choice"] = {"type": "tool", "name": name}
        started = time.perf_counter()
        try:
            result: Any = await self._client.messages.create(**params)
        except Exception as exc:
            error = sdk_error(self._sdk, self.spec, exc)
            if error is None:
                raise
            raise error from None  # the SDK's exception holds the provider's raw text, which may echo the key
        latency = time.perf_counter() - started
        blocks = getattr(result, "content", None)
        usage = getattr(result, "usage", None)
        if blocks is None or usage is None:
            raise MalformedResponseError(f"model {self.spec.name!r}: the response lacks content or usage: {str(result)[:200]}")
        text = "".join(getattr(block, "text", "") if getattr(block, "type", None) == "text"
                       else json.dumps(getattr(block, "input", None), ensure_ascii=False)
                       if getattr(block, "type", None) == "tool_use" else "" for block in blocks)
        raw = {"id": getattr(result, "id", None), "model": getattr(result, "model", None)}
        return LLMResponse(text, usage.input_tokens, usage.output_tokens, getattr(result, "stop_reason", None), latency, raw)

    async def aclose(self) -> None:
        await self._client.close()
