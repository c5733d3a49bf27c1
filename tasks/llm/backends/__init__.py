"""Model backends by name, imported only when a registry entry uses them.

A backend makes one call and says how it failed; retries, rate limits, the
cache and budgets are the client's job, identical for every backend.  The
OpenAI and Anthropic SDKs are generated from the same template and share
their exception hierarchy, so :func:`sdk_error` maps both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tasks.errors import ConfigError
from tasks.llm.redact import remember_secret
from tasks.llm.registry import ModelSpec
from tasks.llm.types import (
    LLMError,
    LLMRequest,
    LLMResponse,
    MalformedResponseError,
    RefusedRequestError,
    TransientLLMError,
)
from tasks.llm.server_errors import refusal
from tasks.plugins import Kind, register_lazy

if TYPE_CHECKING:
    from tasks.llm.endpoints import Negotiation


@runtime_checkable
class NegotiatesStructure(Protocol):
    """A backend whose server is asked for structured output the way its endpoint takes (OpenAI-compatible ones):
    the client hands it the model's :class:`~tasks.llm.endpoints.Negotiation` after the model's check."""

    def use(self, negotiation: Negotiation) -> None:
        ...


class Backend(Protocol):
    async def complete(self, request: LLMRequest) -> LLMResponse:
        """One attempt; raises TransientLLMError, PermanentLLMError or MalformedResponseError."""
        ...

    async def aclose(self) -> None:
        """Release connections (an SDK's HTTP pool belongs to the event loop that opened it)."""
        ...


#: a backend is a class constructed with the model's registry entry; the built-ins are import paths, so an SDK loads
#: only when a model of its backend is called (another package adds one with an entry point, group babelbench.llm-backend)
LLM_BACKENDS: Kind[type[Backend]] = Kind("llm-backend", Backend, "LLM backend", classes=True)
register_lazy(LLM_BACKENDS.name, "openai", "tasks.llm.backends.openai_compat:OpenAICompatBackend")
register_lazy(LLM_BACKENDS.name, "llamacpp", "tasks.llm.backends.llamacpp:LlamaCppBackend")
register_lazy(LLM_BACKENDS.name, "anthropic", "tasks.llm.backends.anthropic:AnthropicBackend")
register_lazy(LLM_BACKENDS.name, "baseline", "tasks.baselines.backend:BaselineBackend")

_PERMANENT_HINTS = {
    400: "the request was rejected; check the parameters and the prompt length",
    401: "authentication failed; check the API key in the registry entry's api_key_env variable",
    403: "access denied; check the key's permissions for this model",
    404: "no such model or route; check `model` and `base_url` in the registry entry",
    413: "the request is too large; shorten the prompt",
    422: "the request was rejected; check the parameters",
}


def create_backend(spec: ModelSpec) -> Backend:
    """A backend for ``spec``, importing its module (and SDK) now."""
    return LLM_BACKENDS.get(spec.backend)(spec)


def api_key(spec: ModelSpec) -> str:
    """The key from the entry's environment variable or Prefect Secret block; a placeholder for open endpoints,
    which ignore it.

    The value is remembered for redaction, so an endpoint that echoes it back
    in an error cannot get it stored or logged (see :mod:`tasks.llm.redact`).
    It is never part of a request's cache key, a fingerprint or a parameter.
    """
    if spec.api_key_secret is not None:
        value = _secret_block(spec)
    elif spec.api_key_env is not None:
        value = os.environ.get(spec.api_key_env, "")
        if not value:
            raise ConfigError(f"model {spec.name!r}: the environment variable {spec.api_key_env} (api_key_env) is not set")
    else:
        return "none"
    remember_secret(value)
    return value


def _secret_block(spec: ModelSpec) -> str:
    """The value of the entry's Prefect Secret block, from the Prefect API the process is connected to."""
    from prefect.blocks.system import Secret

    try:
        value = str(Secret.load(spec.api_key_secret).get())
    except ValueError as exc:  # Prefect: no block document of that name
        raise ConfigError(f"model {spec.name!r}: no Prefect Secret block {spec.api_key_secret!r} (api_key_secret);"
                          f" create it in the Prefect UI or with Secret(value=…).save({spec.api_key_secret!r})") from exc
    if not value:
        raise ConfigError(f"model {spec.name!r}: the Prefect Secret block {spec.api_key_secret!r} is empty")
    return value


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint in seconds: ``retry-after-ms`` (OpenAI) or ``Retry-After`` in seconds.

    ``headers`` must look names up case-insensitively, as HTTP clients' header objects do.
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


def sdk_error(sdk: ModuleType, spec: ModelSpec, exc: Exception) -> LLMError | None:
    """Our error for an exception of the ``openai`` or ``anthropic`` SDK; None when it is not one of theirs."""
    where = f"model {spec.name!r}"
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        refused = refusal(status, exc.body, exc.response.text)
        if refused is None:
            return TransientLLMError(f"{where}: HTTP {status}: {exc.message}", retry_after(exc.response.headers))
        hint = _PERMANENT_HINTS.get(status, "the server refused the request; sent again it is refused again")
        return RefusedRequestError(f"{where}: {refused.describe()} — {hint}", status=status, field=refused.field)
    if isinstance(exc, sdk.APITimeoutError):
        return TransientLLMError(f"{where}: no answer within {spec.timeout:g} s")
    if isinstance(exc, sdk.APIConnectionError):
        return TransientLLMError(f"{where}: connection failed: {exc.__cause__ or exc}")
    if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError)):
        return MalformedResponseError(f"{where}: the response body is not valid: {exc}")
    return None


def require_sdk(module: str, extra_hint: str) -> ModuleType:
    """Import an optional SDK, or say how to install it."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise ConfigError(f"backend needs the `{module}` package: {extra_hint}") from exc
