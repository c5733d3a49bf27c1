"""The judging stage as a Prefect task: one cell per (benchmark, setting, language, model, judge)."""

from __future__ import annotations

from prefect.states import State

from tasks.catalog import JUDGING
from tasks.judging.pointwise import KINDS, JudgeConfig, judge_responses
from tasks.llm import Budget, template_hash
from tasks.stage import ReadFields, StageRef, rows_digest
from tasks.stages.inference import model_identity
from tasks.stages.orchestration import shared_warehouse, stage_task
from tasks.stages.paid import run_paid, unfinished

CELL_RESPONSES = "benchmark = ? AND setting = ? AND lang = ? AND model = ?"


@stage_task("judging")
def judging_stage(home: str, cell: str, benchmark: str, setting: str, lang: str, model: str, judge: str, kind: str,
                  config: JudgeConfig, responses: StageRef, budget: Budget, force: frozenset[str],
                  run_id: str) -> StageRef | State[StageRef]:
    """``judge``'s verdicts on the cell's responses. The responses' ids, statuses and answers are in the
    fingerprint: a rerun that retried failed responses (same inference fingerprint) is judged again; so are the
    question and reference the judge is shown, so a corrected gold answer or context is judged again too."""
    wh = shared_warehouse(home)
    params = [benchmark, setting, lang, model]
    read = ReadFields.of(config, *JudgeConfig.model_fields, judge=model_identity(home, judge), kind=kind,
                         template=template_hash(KINDS[kind].template),
                         responses=rows_digest(wh, f"SELECT instance_id, status, answer FROM responses"
                                                   f" WHERE {CELL_RESPONSES} ORDER BY ALL", params),
                         shown=rows_digest(wh, f"SELECT instance_id, question, {KINDS[kind].column} FROM instances"
                                               " WHERE benchmark = ? AND setting = ? AND lang = ? ORDER BY ALL",
                                           params[:3]))
    return run_paid(
        home, JUDGING, cell, read, {"responses": responses},
        lambda client, ledger, fp: judge_responses(wh, client, benchmark, setting, lang, model, judge, kind, config, fp,
                                                   budget=ledger),
        retry=unfinished(wh, "judgements", f"benchmark = ? AND model = ? AND judge = ? AND instance_id IN"
                                           f" (SELECT instance_id FROM responses WHERE {CELL_RESPONSES})",
                         [benchmark, model, judge, *params]),
        force=force, budget=budget, run_id=run_id)
