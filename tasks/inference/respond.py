"""Model inference over a benchmark's instances: one ``responses`` row per instance and model, whatever happened.

A cell is one (benchmark, setting, language, model).  Requests go through the
model layer, so the call cache makes a rerun free, the run's budget stops
paying where it says, and a budget-stopped or failed instance is a row with
its status that the next run retries.  What is stored is both the raw reply
(as in ``llm_calls``) and what was read from it — the answer section, the
cited document ids and the response's language — so judges and metrics never re-parse replies, and a
better reader can be applied to stored replies without paying again.  A completion model's reply
continues its prompt, so what it goes on to repeat of the prompt is not read as its reply
(:func:`tasks.inference.reading.own_reply`): neither its answer, nor its citations, nor its language.
"""

from __future__ import annotations

import json
from dataclasses import astuple, fields
from functools import partial

from tasks.inference.gold import gold_shown_to
from tasks.inference.language import ResponseLanguage, response_language
from tasks.inference.prompting import InferenceConfig, instance_request
from tasks.inference.reading import answer_section, citations, own_reply
from tasks.llm import BudgetLedger, CallResult, LLMClient
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import Parsed
from tasks.recipe import recipe as recipe_of
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse, insert_rows

STAGE = "inference"
INSTANCE_COLUMNS = "instance_id, recipe, setting, lang, question, documents, prompt_hint, extra"


def read_answer(text: str, primed: bool = False) -> Parsed:
    """The answer section of a reply (``primed``: a completion model's, see :mod:`tasks.inference.reading`); a
    reply with nothing in it, or nothing before it repeats its prompt, is ``parse_failed``."""
    answer = answer_section(text, primed)
    if answer:
        return Parsed("ok", answer)
    echoed = primed and bool(text.strip()) and not own_reply(text, primed).strip()
    return Parsed("parse_failed", None, "the reply only repeats the prompt" if echoed else "the reply holds no answer")


def answer_instances(
    wh: Warehouse, client: LLMClient, benchmark: str, setting: str, lang: str, model: str, config: InferenceConfig,
    fp: str, *, budget: BudgetLedger | None = None,
) -> StageOutput:
    """Ask ``model`` every instance of the cell; replaces the cell's earlier responses."""
    instances = wh.query_dicts(
        f"SELECT {INSTANCE_COLUMNS} FROM instances WHERE benchmark = ? AND setting = ? AND lang = ? ORDER BY instance_id",
        [benchmark, setting, lang])
    spec = client.registry.get(model)
    prompts = [instance_request(spec, instance, config) for instance in instances]
    requests = [request for _, request in prompts]
    with gold_shown_to(wh, spec, benchmark, [(instance["instance_id"], ()) for instance in instances], requests):
        results = client.run_sync(model, requests, stage=STAGE, budget=budget)
    primed = spec.mode == "completion"  # every completion prompt ends by opening the reply's section
    rows = [_row(benchmark, instance, model, template, result, primed, fp)
            for instance, (template, _), result in zip(instances, prompts, results, strict=True)]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM responses WHERE benchmark = ? AND setting = ? AND lang = ? AND model = ?",
                    [benchmark, setting, lang, model])
        insert_rows(cur, "responses", rows)
    counts = {status: sum(row[5] == status for row in rows) for status in {row[5] for row in rows}}
    return StageOutput(rows=len(rows), message=f"{len(rows)} responses: {dict(sorted(counts.items()))}")


def stored_language(instance: dict, reply: str, answer: str) -> ResponseLanguage:
    """lingua's reading of a response to an ``instances`` row (``recipe``, ``lang``, ``documents``), among the
    question's language, English and the languages of the documents shown.

    The recipe says what is read (:attr:`~tasks.recipe.Recipe.language_of`): XRAG's language rule is about the
    answer it asks for, the tag's content, never the markup around it (which tilts lingua: "<answer>Der
    Pellow-Tunnel, 1868.</answer>" reads as English) nor reasoning outside the tag; elsewhere the whole reply is
    the response.
    """
    shown = frozenset(doc["lang"] for doc in json.loads(instance["documents"] or "[]") if doc.get("lang"))
    read = answer if recipe_of(instance["recipe"]).language_of == "answer" else reply
    return response_language(read, instance["lang"], shown)


def _row(benchmark: str, instance: dict, model: str, template: str, result: CallResult, primed: bool,
         fp: str) -> list:
    outcome = item_outcome(result, partial(read_answer, primed=primed))
    response = result.response
    reply = own_reply(result.answer, primed)
    language = stored_language(instance, reply, outcome.value) if outcome.status == "ok" else None
    return [benchmark, instance["instance_id"], model, instance["setting"], instance["lang"], outcome.status,
            outcome.reason, response.text if response else None, outcome.value,
            citations(reply) if response else [],
            response.input_tokens if response else None, response.output_tokens if response else None,
            response.latency_s if response else None, result.request_hash, template, fp,
            *(astuple(language) if language else [None] * len(fields(ResponseLanguage)))]
