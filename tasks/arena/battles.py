"""Pairwise judging: a seeded sample of queries per language, every pair of systems on each, in both orders.

The sample is drawn from the language's instances whoever answered, so adding a system never changes the
others' sample; both orders measure position bias.  A system without an answer on a sampled query loses
that pair without a judge call (a ``forfeit`` battle: a failure is a loss, never a smaller sample).
:func:`judging_estimate` bounds the whole arena's cost before any cell is judged.

See ``docs/arena.md``, "Battles".
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tasks.inference.gold import gold_shown_to
from tasks.inference.prompting import Sampling, language_name, shown_documents
from tasks.llm import Budget, BudgetLedger, LLMClient, LLMRequest, ModelSpec, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.verdicts import PAIRWISE, read_pairwise
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse, insert_rows

STAGE = "arena-judging"
TEMPLATE = "judge_pairwise"


class ArenaConfig(BaseModel):
    """How battles are drawn and judged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    queries_per_lang: int = Field(100, ge=1, description="Queries sampled per language (MIRAGE: about 100).")
    seed: int = Field(0, description="Seed of the query sample.")
    judge_own_system: bool = Field(False, description="Let the judge rate pairs that include its own answers.")
    max_tokens: int = Field(256, ge=8, description="Tokens for the judge's explanation and verdict.")
    doc_chars: int = Field(1200, ge=100, description="Characters of each passage shown to the judge.")


def sampled_queries(wh: Warehouse, benchmark: str, lang: str, config: ArenaConfig) -> list[str]:
    """The language's sampled instance ids: a seeded sample of its instances (in the settings that have responses,
    whoever gave them and whatever their status), sorted; the same whichever systems enter the arena."""
    population = [row[0] for row in wh.query(
        "SELECT instance_id FROM instances WHERE benchmark = ? AND lang = ? AND setting IN"
        " (SELECT DISTINCT setting FROM responses WHERE benchmark = ? AND lang = ?) ORDER BY instance_id",
        [benchmark, lang, benchmark, lang])]
    seed = int.from_bytes(hashlib.sha256(f"{config.seed}:{benchmark}:{lang}".encode()).digest()[:8], "big")
    return sorted(random.Random(seed).sample(population, min(config.queries_per_lang, len(population))))


def judged_pairs(models: Sequence[str], judge: str, config: ArenaConfig) -> list[tuple[str, str]]:
    """Every ordered pair (shown first, shown second) of distinct systems, without the judge's own unless allowed."""
    systems = sorted(set(models))
    return [(a, b) for x, y in itertools.combinations(systems, 2) for a, b in ((x, y), (y, x))
            if config.judge_own_system or judge not in (a, b)]


@dataclass(frozen=True)
class Forfeit:
    """A pair not sent to the judge on ``query`` because ``missing`` (one system, or both) had no answer there."""

    query: str
    first: str
    second: str
    missing: frozenset[str]

    @property
    def winner(self) -> str:
        """The system that answered wins; two systems without an answer tie."""
        return "tie" if len(self.missing) == 2 else "b" if self.first in self.missing else "a"


def battle_requests(wh: Warehouse, spec: ModelSpec, benchmark: str, lang: str, models: Sequence[str], judge: str,
                    config: ArenaConfig) -> tuple[list[tuple[str, str, str]], list[LLMRequest], list[Forfeit]]:
    """The language's battles for the judge — (query, shown first, shown second) for every sampled query and ordered
    pair where both systems answered — the judge's request for each, and the pairs forfeited for want of an
    answer."""
    queries = sampled_queries(wh, benchmark, lang, config)
    pairs = judged_pairs(models, judge, config)
    answers = {(r["instance_id"], r["model"]): r["answer"] for r in wh.query_dicts(
        "SELECT instance_id, model, answer FROM responses WHERE benchmark = ? AND lang = ? AND status = 'ok'"
        " AND list_contains(?, model)", [benchmark, lang, sorted(set(models))])}
    battles, forfeits = [], []
    for query in queries:
        for a, b in pairs:
            missing = frozenset(system for system in (a, b) if (query, system) not in answers)
            if missing:
                forfeits.append(Forfeit(query, a, b, missing))
            else:
                battles.append((query, a, b))
    instances = {r["instance_id"]: r for r in wh.query_dicts(
        "SELECT instance_id, question, documents FROM instances WHERE benchmark = ? AND lang = ?", [benchmark, lang])}
    sampling = Sampling(doc_chars=config.doc_chars)
    stop = ("\n\n",) if spec.mode == "completion" else None  # a base model may carry on past its verdict
    requests = [prompt_request(spec, TEMPLATE, max_tokens=config.max_tokens, stop=stop, response_format=PAIRWISE,
                               question=instances[query]["question"],
                               language=language_name(lang),
                               documents=shown_documents(json.loads(instances[query]["documents"] or "[]"), sampling),
                               answer_a=answers[(query, a)], answer_b=answers[(query, b)])
                for query, a, b in battles]
    return battles, requests, forfeits


def failed_queries(forfeits: Sequence[Forfeit]) -> dict[str, int]:
    """How many sampled queries each system had no answer on (among those where it had a pair to play)."""
    missing: dict[str, set[str]] = {}
    for forfeit in forfeits:
        for system in forfeit.missing:
            missing.setdefault(system, set()).add(forfeit.query)
    return {system: len(queries) for system, queries in sorted(missing.items())}


def judge_battles(wh: Warehouse, client: LLMClient, benchmark: str, lang: str, models: Sequence[str], judge: str,
                  config: ArenaConfig, fp: str, *, budget: BudgetLedger | None = None) -> StageOutput:
    """The judge's verdict on every sampled query and ordered pair, and the forfeits; replaces the cell's earlier
    battles between these systems (battles of other systems, from earlier runs, stay)."""
    spec = client.registry.get(judge)
    battles, requests, forfeits = battle_requests(wh, spec, benchmark, lang, models, judge, config)
    with gold_shown_to(wh, spec, benchmark, [(query, (a, b)) for query, a, b in battles], requests):
        results = client.run_sync(judge, requests, stage=STAGE, budget=budget)
    rows = []
    for (query, a, b), result in zip(battles, results, strict=True):
        outcome = item_outcome(result, read_pairwise)
        verdict = outcome.value if outcome.ok else None
        rows.append([benchmark, query, lang, judge, a, b, verdict.value if verdict else None, outcome.status,
                     outcome.reason, result.response.text if result.response else None, result.request_hash, fp,
                     verdict.justification if verdict else None])
    rows += [[benchmark, f.query, lang, judge, f.first, f.second, f.winner, "forfeit",
              f"no answer from {' and '.join(sorted(f.missing))}", None, None, fp, None] for f in forfeits]
    systems = sorted(set(models))
    with wh.transaction() as cur:
        cur.execute("DELETE FROM battles WHERE benchmark = ? AND lang = ? AND judge = ? AND list_contains(?, model_a)"
                    " AND list_contains(?, model_b)", [benchmark, lang, judge, systems, systems])
        if rows:
            insert_rows(cur, "battles", rows)
    counts = {status: sum(row[7] == status for row in rows) for status in sorted({row[7] for row in rows})}
    skipped = "" if config.judge_own_system or judge not in models else f"; pairs with {judge} itself not judged"
    queries = len({row[1] for row in rows})
    failed = failed_queries(forfeits)
    no_answer = ("; no answer (a loss against each system that answered) on " + ", ".join(
        f"{system} {count}" for system, count in failed.items()) + " queries") if failed else ""
    return StageOutput(rows=len(rows), message=f"{queries} queries x {len(judged_pairs(models, judge, config))}"
                                               f" ordered pairs: {counts}{skipped}{no_answer}")


@dataclass(frozen=True)
class JudgingEstimate:
    """What judging an arena may cost at most, known before anything is paid."""

    judge: str
    queries: int  # sampled queries over all languages
    pairs: int  # ordered pairs per query: every pair of systems in both orders
    tokens: int  # at most, over the requests the call cache cannot answer
    usd: float
    forfeits: int = 0  # ordered pairs with a system that has no answer: decided without the judge

    def describe(self, budget: Budget) -> str:
        """One line: the arithmetic, the estimate, and the budget it runs under."""
        limits = {name: value for name, value in budget.model_dump().items() if value is not None}
        over = [name for name, value in (("max_tokens", self.tokens), ("max_usd", self.usd))
                if name in limits and value > limits[name]]
        within = ("no budget limit" if not limits else
                  "budget " + ", ".join(f"{name}={value}" for name, value in limits.items())
                  + (f" (the estimate exceeds {' and '.join(over)}: judging stops there, a rerun with a larger"
                     " budget resumes)" if over else ""))
        forfeited = (f" ({self.forfeits} of them without a call: a system has no answer)" if self.forfeits else "")
        return (f"judging by {self.judge}: {self.queries} queries x {self.pairs} ordered pairs ="
                f" {self.queries * self.pairs} verdicts{forfeited}; not yet cached: at most ~{self.tokens} tokens,"
                f" ~${self.usd:.4f}; {within}")


def judging_estimate(wh: Warehouse, client: LLMClient, benchmark: str, langs: Sequence[str], models: Sequence[str],
                     judge: str, config: ArenaConfig) -> JudgingEstimate:
    """The cost of judging every language's battles, from the very requests the judging cells will send."""
    spec = client.registry.get(judge)
    queries, requests, forfeits = 0, [], 0
    for lang in langs:
        battles, lang_requests, lang_forfeits = battle_requests(wh, spec, benchmark, lang, models, judge, config)
        queries += len({query for query, _, _ in battles} | {f.query for f in lang_forfeits})
        requests += lang_requests
        forfeits += len(lang_forfeits)
    tokens, usd = client.estimate_cost(judge, requests)
    return JudgingEstimate(judge, queries, len(judged_pairs(models, judge, config)), tokens, usd, forfeits)
