"""The gold a baseline backend may read: the ``oracle`` answers with it, the ``reference-judge`` compares with it.

A backend sees only its request, and the gold is in no prompt, so the stages that ask about instances hand
it over beside the request: :func:`gold_shown_to` holds it in a context variable for one batch of calls
(looked up only for the :data:`GOLD_READERS`), :func:`gold_for` reads it back.  A real model never gets it,
request hashes stay as they were, and parallel cells each see their own.  The price: a cached baseline reply
outlives a corrected gold answer.

See ``docs/models-and-backends.md``, "Baselines".
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from tasks.errors import ConfigError
from tasks.inference.prompting import document_id
from tasks.llm.registry import ModelSpec, Registry
from tasks.llm.types import LLMRequest
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class Gold:
    """What a baseline may know about one request's instance."""

    lang: str  # the question's language (how answers are tokenised for comparison)
    answers: tuple[str, ...]  # the accepted answers, the instance's own first; empty: the question has none
    support: tuple[str, ...]  # the supporting documents' ids, as prompts name them
    judged: tuple[str, ...] = ()  # for a judge: the answers it is asked about, in the order the prompt shows them


#: The baselines (a registry entry's ``model``, backend ``baseline``) that read the gold; for any other model the
#: stages look nothing up.
GOLD_READERS = frozenset({"oracle", "reference-judge"})
_GOLD: ContextVar[Mapping[LLMRequest, Gold]] = ContextVar("baseline_gold", default=MappingProxyType({}))


def gold_for(request: LLMRequest) -> Gold | None:
    """The gold handed over with ``request`` by the stage that sent it, None when it handed none."""
    return _GOLD.get().get(request)


def instance_gold(instance: Mapping[str, Any]) -> Gold:
    """The gold of an ``instances`` row (``lang``, ``answer``, ``gold``, ``documents``).

    MKQA's answers are its gold texts and aliases in the question's language (none for a question without a
    short answer); every other recipe's is the instance's answer.
    """
    if instance.get("gold"):
        given = [answer for answer in json.loads(instance["gold"]) if answer.get("text")]
        answers = tuple(dict.fromkeys([answer["text"] for answer in given]
                                      + [alias for answer in given for alias in answer.get("aliases") or []]))
    else:
        answers = (instance["answer"],) if instance.get("answer") else ()
    support = tuple(document_id(document) for document in json.loads(instance.get("documents") or "[]")
                    if document.get("role") == "support")
    return Gold(instance["lang"], answers, support)


@contextmanager
def gold_shown_to(wh: Warehouse, spec: ModelSpec, benchmark: str, asked: Sequence[tuple[str, Sequence[str]]],
                  requests: Sequence[LLMRequest]) -> Iterator[None]:
    """While the block runs, the baseline ``spec`` answering ``requests[i]`` can read the gold of instance
    ``asked[i][0]`` of ``benchmark`` and, when it judges, the answers of the models ``asked[i][1]`` to it, in order.

    For any other model this does nothing at all (see the module notes).
    """
    if spec.backend != "baseline" or spec.model not in GOLD_READERS or not requests:
        yield
        return
    ids = sorted({instance for instance, _ in asked})
    models = sorted({model for _, shown in asked for model in shown})
    instances = {row["instance_id"]: instance_gold(row) for row in wh.query_dicts(
        "SELECT instance_id, lang, answer, gold, documents FROM instances"
        " WHERE benchmark = ? AND list_contains(?, instance_id)", [benchmark, ids])}
    answers = {(row["instance_id"], row["model"]): row["answer"] or "" for row in wh.query_dicts(
        "SELECT instance_id, model, answer FROM responses WHERE benchmark = ? AND list_contains(?, instance_id)"
        " AND list_contains(?, model)", [benchmark, ids, models])} if models else {}
    shown = {request: Gold(instances[instance].lang, instances[instance].answers, instances[instance].support,
                           tuple(answers.get((instance, model), "") for model in judged))
             for request, (instance, judged) in zip(requests, asked, strict=True) if instance in instances}
    token = _GOLD.set(MappingProxyType(shown))
    try:
        yield
    finally:
        _GOLD.reset(token)


def check_gold_readers(wh: Warehouse, registry: Registry, names: Sequence[str], benchmark: str) -> None:
    """Refuse, before any call, a baseline among the models ``names`` that reads the gold when ``benchmark`` has none
    (a MIRACL import: judged passages, no answers): every verdict or answer it gave would be made up.  A name the
    registry does not know (a system whose responses were imported) is no baseline."""
    specs = [spec for spec in registry.models if spec.name in names]
    readers = [spec.name for spec in specs if spec.backend == "baseline" and spec.model in GOLD_READERS]
    if not readers:
        return
    answered = wh.scalar("SELECT count(*) FROM instances WHERE benchmark = ? AND (coalesce(answer, '') <> ''"
                         " OR len(list_filter(json_extract_string(gold, '$[*].text'), t -> coalesce(t, '') <> '')) > 0)",
                         [benchmark])
    if not answered:
        raise ConfigError(f"benchmark {benchmark!r} has no gold answers, and {', '.join(readers)} compares with the gold"
                          " answer: choose a model as judge (or a system other than the oracle)")
