"""The arena's stages: pairwise judging per (benchmark, language, judge), then ratings per (benchmark, judge)."""

from __future__ import annotations

import json
import logging
from collections import defaultdict

from prefect.artifacts import create_markdown_artifact
from prefect.states import State

from tasks.arena.battles import TEMPLATE, ArenaConfig, JudgingEstimate, judge_battles
from tasks.arena.bradley_terry import Ties, ratings, tournaments
from tasks.arena.pairwise import OrderedVerdict, judge_agreement
from tasks.arena.surrogate import feature_cube, surrogate
from tasks.inference.stages import model_identity
from tasks.llm import Budget, template_hash
from tasks.orchestration import as_task_result, forced, shared_warehouse, stage_task
from tasks.paid_stage import run_paid, unfinished
from tasks.stage import ReadFields, Stage, StageOutput, StageRef, rows_digest, run_stage
from tasks.warehouse.db import Warehouse

ARENA_JUDGING = Stage("arena-judging", 1, upstream=("inference",))
ARENA_RATINGS = Stage("arena-ratings", 1, upstream=("arena-judging",))
ARENA_SURROGATE = Stage("arena-surrogate", 2, upstream=("arena-ratings", "features"))
ALL = "all"

log = logging.getLogger(__name__)


@stage_task("arena-judging")
def arena_judging_stage(home: str, cell: str, benchmark: str, lang: str, models: list[str], judge: str,
                        config: ArenaConfig, budget: Budget, force: frozenset[str],
                        run_id: str) -> StageRef | State[StageRef]:
    """The judge's battles on the language's sampled queries (see :mod:`tasks.arena.battles`)."""
    wh = shared_warehouse(home)
    read = ReadFields.of(config, *ArenaConfig.model_fields, judge=model_identity(home, judge), models=sorted(models),
                         template=template_hash(TEMPLATE),
                         responses=rows_digest(wh, "SELECT instance_id, model, status, answer FROM responses"
                                                   " WHERE benchmark = ? AND lang = ? ORDER BY ALL", [benchmark, lang]))
    return run_paid(home, ARENA_JUDGING, cell, read, {},
                    lambda client, ledger, fp: judge_battles(wh, client, benchmark, lang, models, judge, config, fp,
                                                             budget=ledger),
                    retry=unfinished(wh, "battles", "benchmark = ? AND lang = ? AND judge = ?", [benchmark, lang, judge]),
                    force=force, budget=budget, run_id=run_id)


def publish_estimate(estimate: JudgingEstimate, budget: Budget) -> None:
    """Show the judging's cost before anything is paid: the log, a Prefect markdown artifact, the MLflow run."""
    import mlflow

    line = estimate.describe(budget)
    log.info("cost estimate: %s", line)
    create_markdown_artifact(markdown=f"## Arena cost estimate\n\n{line}", key="babelbench-arena-estimate",
                             description="What judging may cost at most, before any call")
    mlflow.log_metrics({"estimate.judge_tokens": float(estimate.tokens), "estimate.judge_usd": estimate.usd,
                        "estimate.verdicts": float(estimate.queries * estimate.pairs)})


def rate(wh: Warehouse, benchmark: str, judge: str, ties: Ties, bootstrap: int, seed: int, fp: str) -> StageOutput:
    """Ratings per language and over all languages, with the judge's consistency; replaces the judge's ratings."""
    verdicts = [OrderedVerdict(r["instance_id"], r["lang"], r["model_a"], r["model_b"], r["winner"])
                for r in wh.query_dicts("SELECT instance_id, lang, model_a, model_b, winner FROM battles"
                                        " WHERE benchmark = ? AND judge = ? AND status = 'ok' ORDER BY ALL",
                                        [benchmark, judge])]
    by_lang: dict[str, list[OrderedVerdict]] = defaultdict(list)
    for verdict in verdicts:
        by_lang[verdict.lang].append(verdict)
        by_lang[ALL].append(verdict)
    rows, skipped = [], []
    for lang, group in sorted(by_lang.items()):
        battles = [verdict.battle() for verdict in group]
        if ties == "drop" and all(b.winner == "tie" for b in battles):
            skipped.append(lang)
            continue
        result = ratings(battles, bootstrap=bootstrap, seed=seed, ties=ties)
        agreement = judge_agreement(group)
        rows += [[benchmark, judge, lang, model, m["rating"], m["ci_low"], m["ci_high"], m["rank_low"], m["rank_high"],
                  result["n_battles"], ties, agreement["consistency"], agreement["first_position_rate"], fp, False]
                 for model, m in result["models"].items()]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM arena_ratings WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        if rows:
            cur.executemany(f"INSERT INTO arena_ratings VALUES ({', '.join('?' * 15)})", rows)
    note = f"; only ties in {', '.join(skipped)}" if skipped else ""
    return StageOutput(rows=len(rows), message=f"{len(verdicts)} battles rated in {len(by_lang)} groups{note}")


@stage_task("arena-ratings")
def arena_ratings_stage(home: str, cell: str, benchmark: str, judge: str, ties: Ties, bootstrap: int, seed: int,
                        judged: list[StageRef], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """Bradley–Terry ratings of the judge's battles (``judged``: the judging cells it waits for)."""
    wh = shared_warehouse(home)
    read = ReadFields(values={"ties": ties, "bootstrap": bootstrap, "seed": seed,
                              "battles": rows_digest(wh, "SELECT instance_id, lang, model_a, model_b, winner, status"
                                                         " FROM battles WHERE benchmark = ? AND judge = ? ORDER BY ALL",
                                                     [benchmark, judge])})
    return as_task_result(run_stage(wh, ARENA_RATINGS, cell, read, {},
                                    lambda fp: rate(wh, benchmark, judge, ties, bootstrap, seed, fp),
                                    force=forced(ARENA_RATINGS.name, force), run_id=run_id))


def fit_surrogate(wh: Warehouse, benchmark: str, judge: str, ties: Ties, bootstrap: int, seed: int,
                  fp: str) -> StageOutput:
    """The surrogate's report, and predicted ratings for systems with features but no battles."""
    battles = [OrderedVerdict(r["instance_id"], r["lang"], r["model_a"], r["model_b"], r["winner"]).battle()
               for r in wh.query_dicts("SELECT instance_id, lang, model_a, model_b, winner FROM battles"
                                       " WHERE benchmark = ? AND judge = ? AND status = 'ok' ORDER BY ALL",
                                       [benchmark, judge])]
    rows = wh.query("SELECT i.lang, f.instance_id, f.model, f.feature, f.value FROM features f"
                    " JOIN instances i USING (benchmark, instance_id) WHERE f.benchmark = ? AND f.status = 'ok'",
                    [benchmark])
    decisive = [b for b in battles if b.winner != "tie" or ties == "half"]
    judged = {b.model_a for b in decisive} | {b.model_b for b in decisive}
    if len(judged) < 3 or not rows:
        with wh.transaction() as cur:
            cur.execute("DELETE FROM surrogate_reports WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        return StageOutput(rows=0, message=f"not fitted: needs features and decisive battles between at least 3"
                                           f" systems (has {len(judged)})")
    lang_ratings: dict[str, dict[str, float]] = defaultdict(dict)
    for lang, model, rating in wh.query("SELECT lang, model, rating FROM arena_ratings WHERE benchmark = ?"
                                        " AND judge = ? AND NOT predicted", [benchmark, judge]):
        lang_ratings[lang][model] = rating
    rated = lang_ratings.pop(ALL, {})
    report = surrogate(feature_cube(rows), tournaments(battles, bootstrap=bootstrap, seed=seed, ties=ties), battles,
                       dict(lang_ratings), seed=seed)
    predicted_rows = []
    for model, p in report["predicted"].items():
        rank = 1 + sum(rating > p["rating"] for rating in rated.values())
        predicted_rows.append([benchmark, judge, ALL, model, p["rating"], p["ci_low"], p["ci_high"], rank, rank, 0, ties,
                               None, None, fp, True])
    with wh.transaction() as cur:
        cur.execute("DELETE FROM arena_ratings WHERE benchmark = ? AND judge = ? AND predicted", [benchmark, judge])
        if predicted_rows:
            cur.executemany(f"INSERT INTO arena_ratings VALUES ({', '.join('?' * 15)})", predicted_rows)
        cur.execute("INSERT OR REPLACE INTO surrogate_reports VALUES (?, ?, ?, ?)",
                    [benchmark, judge, json.dumps(report), fp])
    loso = report["leave_systems_out"]
    r2 = "undefined" if loso["r2"] is None else f"{loso['r2']:.3f}"
    return StageOutput(rows=len(predicted_rows), message=f"leave-systems-out R² {r2}, Kendall τ"
                                                         f" {loso['kendall_tau']}; {len(predicted_rows)} predicted")


@stage_task("arena-surrogate")
def arena_surrogate_stage(home: str, cell: str, benchmark: str, judge: str, ties: Ties, bootstrap: int, seed: int,
                          upstream: list[StageRef], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    """The surrogate judge (``upstream``: the ratings and feature cells it waits for)."""
    wh = shared_warehouse(home)
    read = ReadFields(values={
        "ties": ties, "bootstrap": bootstrap, "seed": seed,
        "battles": rows_digest(wh, "SELECT instance_id, lang, model_a, model_b, winner, status FROM battles"
                                   " WHERE benchmark = ? AND judge = ? ORDER BY ALL", [benchmark, judge]),
        "features": rows_digest(wh, "SELECT instance_id, model, feature, value, status FROM features"
                                    " WHERE benchmark = ? ORDER BY ALL", [benchmark])})
    return as_task_result(run_stage(wh, ARENA_SURROGATE, cell, read, {},
                                    lambda fp: fit_surrogate(wh, benchmark, judge, ties, bootstrap, seed, fp),
                                    force=forced(ARENA_SURROGATE.name, force), run_id=run_id))
