"""Structured output over HTTP: the ladder of ways to ask a server for a reply that follows a JSON schema.

Servers differ in what they take.  OpenAI, vLLM, llama.cpp's llama-server,
Ollama and LM Studio take ``response_format: {"type": "json_schema", …}``;
llama-cpp-python's server refuses it (HTTP 500, a validation error) but takes
``{"type": "json_object", "schema": …}``; llama.cpp servers also take a GBNF
``grammar`` on their completion routes, where the OpenAI fields are ignored;
some take only ``json_object``; some nothing.  So a model's endpoint is asked
each way in turn, from the strongest, until it takes one (:data:`LADDER`):
it *takes* a rung when it answers a small probe (:data:`PROBE`) with an object
that follows the probe's schema — a server that accepts a field and ignores it
has not taken it.  What was found is remembered per endpoint in the home
(:mod:`tasks.llm.endpoints`) and a refusal met later, in a real call, steps
down the same ladder.  The last rung sends no field: the strict verdict reader
(:mod:`tasks.llm.verdicts`) reads the reply alone.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any, Literal

from tasks.llm.types import ResponseFormat

StructuredMode = Literal["json_schema", "json_object_schema", "grammar", "json_object", "none"]
#: From the strongest to none.  ``grammar`` (llama.cpp's own field, the schema written as GBNF) comes before the bare
#: ``json_object``: it still holds the reply to the schema, which ``json_object`` does not.
LADDER: tuple[StructuredMode, ...] = ("json_schema", "json_object_schema", "grammar", "json_object", "none")
DESCRIPTIONS: dict[StructuredMode, str] = {
    "json_schema": 'response_format {"type": "json_schema"}',
    "json_object_schema": 'response_format {"type": "json_object", "schema": …}',
    "grammar": "a llama.cpp grammar (GBNF) made from the schema",
    "json_object": 'response_format {"type": "json_object"}, without the schema',
    "none": "no field: the reply is read strictly",
}
#: Request fields that carry one of the rungs: a refusal naming one is a refusal of the rung, not of the request.
STRUCTURE_FIELDS = frozenset({"response_format", "json_schema", "grammar", "schema", "guided_json"})
#: The most characters a free-text field of a reply under a grammar may hold: a small model that rambles in its
#: justification must still close the object within the request's max_tokens.  Servers that turn the schema into a
#: grammar themselves (the llama.cpp family) are sent it bounded too; OpenAI's strict ``json_schema`` gets it as is.
FREE_TEXT_CHARS = 200

#: What the ladder is tried with: an object no model writes unasked, so a reply that follows it was held to it.
PROBE = ResponseFormat.of("babelbench_probe", {
    "type": "object", "properties": {"probe": {"type": "string", "enum": ["ok"]}}, "required": ["probe"],
    "additionalProperties": False})
#: The probe's prompt names JSON, which OpenAI requires of any request asking for a JSON object.
PROBE_PROMPT = "Reply with a JSON object."


class GrammarUnavailableError(RuntimeError):
    """llama-cpp-python, whose converter writes the grammar, is not installed: the rung is skipped."""


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``maxLength`` on each free-text string property (not on enums)."""
    bounded = copy.deepcopy(schema)
    for field in bounded.get("properties", {}).values():
        if field.get("type") == "string" and "enum" not in field:
            field.setdefault("maxLength", FREE_TEXT_CHARS)
    return bounded


@lru_cache(maxsize=16)
def grammar_text(response_format: ResponseFormat) -> str:
    """The GBNF grammar of the (bounded) schema, by llama-cpp-python's converter: once per format."""
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:
        raise GrammarUnavailableError("llama-cpp-python is not installed, so no grammar can be written from the"
                                      " schema (pip install llama-cpp-python)") from exc
    return json_schema_to_gbnf(json.dumps(bounded_schema(response_format.json_schema)))


def request_fields(mode: StructuredMode, response_format: ResponseFormat) -> dict[str, Any]:
    """The body fields that ask for ``response_format`` the way ``mode`` does (none for ``none``)."""
    schema = response_format.json_schema
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": response_format.name, "schema": schema, "strict": True}}}
    if mode == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": bounded_schema(schema)}}
    if mode == "grammar":
        return {"grammar": grammar_text(response_format)}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    return {}


def follows_probe(mode: StructuredMode, reply: str) -> bool:
    """Whether a reply to :data:`PROBE` shows the rung was applied: the probe's object for a rung that carries the
    schema, any JSON object for bare ``json_object``, anything for ``none``."""
    if mode == "none":
        return True
    try:
        value = json.loads(reply.strip())
    except ValueError:
        return False
    if mode == "json_object":
        return isinstance(value, dict)
    return value == {"probe": "ok"}


def next_mode(mode: StructuredMode) -> StructuredMode | None:
    """The rung below ``mode``; None below ``none``."""
    position = LADDER.index(mode)
    return LADDER[position + 1] if position + 1 < len(LADDER) else None


def about_structure(field: str | None) -> bool:
    """Whether a refused field is one of the rungs' (``response_format.type``, ``grammar`` …)."""
    return field is not None and field.split(".")[0] in STRUCTURE_FIELDS
