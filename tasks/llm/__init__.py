"""The model layer: a registry of models, backends behind one interface, and the call discipline.

Stages build :class:`LLMRequest` objects (prompts from :func:`render`), run them
through :class:`LLMClient` — cached in the warehouse, within a :class:`Budget`,
retried, rate limited — and read one :class:`CallResult` per request.  Backend
SDKs (openai, llama-cpp-python, anthropic) are imported only when a model of
theirs is called.
"""

from tasks.llm.budget import Budget, BudgetLedger, estimate_cost, run_ledger
from tasks.llm.check import ModelCheck, check_model
from tasks.llm.client import LLMClient
from tasks.llm.endpoints import EndpointMemory
from tasks.llm.prompts import prompt_request, recipe_templates, render, template_hash
from tasks.llm.registry import ModelSpec, Registry, load_registry
from tasks.llm.registry_edit import add_model, edit_model
from tasks.llm.types import (
    CallResult,
    ChatMessage,
    LLMError,
    LLMRequest,
    LLMResponse,
    MalformedResponseError,
    PermanentLLMError,
    TransientLLMError,
)

__all__ = [
    "Budget",
    "BudgetLedger",
    "CallResult",
    "ChatMessage",
    "EndpointMemory",
    "LLMClient",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "MalformedResponseError",
    "ModelCheck",
    "ModelSpec",
    "PermanentLLMError",
    "Registry",
    "TransientLLMError",
    "add_model",
    "check_model",
    "edit_model",
    "estimate_cost",
    "load_registry",
    "prompt_request",
    "recipe_templates",
    "render",
    "run_ledger",
    "template_hash",
]
