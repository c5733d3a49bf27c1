"""A person's verdicts on stored responses, kept beside the model judges' so that their agreement can be measured.

JSON lines ``{"instance_id", "model", "verdict"}`` (``"yes"``/``"no"`` or booleans), each on one stored,
answered response, of the benchmark's judge kind.  The whole file is checked first; the verdicts are
``judgements`` rows of judge ``human:<name>``, replacing that name's earlier ones in one transaction.  No
registry model has the prefix, so a person never enters a panel's majority.

See ``docs/evaluation.md``, "Judge agreement".
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tasks.catalog import VERDICTS_IMPORT
from tasks.errors import ConfigError
from tasks.imports.common import file_digest, unique_lines
from tasks.json_lines import read_typed_lines
from tasks.metrics.agreement import HUMAN
from tasks.recipe import recipe as recipe_of
from tasks.stage import ReadFields, StageOutput, StageRef, rows_digest, run_stage
from tasks.warehouse.db import Warehouse, insert_rows

#: one cell per (benchmark, person): the same file over the same responses again is a cache hit
VERDICTS = {"yes": "yes", "no": "no", True: "yes", False: "no"}


class VerdictLine(msgspec.Struct):
    """One line of a verdicts file (see the module notes)."""

    instance_id: str
    model: str
    verdict: str | bool


def human_judge(name: str) -> str:
    """The judge name a person's verdicts are stored under: ``human:<name>`` (given with the prefix or not)."""
    bare = name.strip().removeprefix(HUMAN).strip()
    if not bare:
        raise ConfigError(f"--judge {name!r}: give the person (or the group of annotators) a name")
    return HUMAN + bare


def import_verdicts(wh: Warehouse, benchmark: str, name: str, path: Path, *, force: bool = False,
                    run_id: str | None = None) -> StageRef:
    """Store ``path``'s verdicts as judge ``human:<name>``'s on ``benchmark`` (a cell of :data:`VERDICTS_IMPORT`)."""
    judge = human_judge(name)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    recipe = wh.scalar("SELECT recipe FROM qa_benchmarks WHERE benchmark = ?", [benchmark])
    if recipe is None:
        raise ConfigError(f"no benchmark {benchmark!r}; build or import it first")
    kind = recipe_of(recipe).judge
    if kind is None:
        raise ConfigError(f"benchmark {benchmark!r} ({recipe}) is scored without a judge: there are no judges'"
                          " verdicts to compare a person's with")
    read = ReadFields(values={"source": file_digest(path), "benchmark": benchmark, "judge": judge, "kind": kind,
                              "responses": rows_digest(wh, "SELECT instance_id, model, status FROM responses"
                                                           " WHERE benchmark = ? ORDER BY ALL", [benchmark])})
    return run_stage(wh, VERDICTS_IMPORT, f"{benchmark}/{judge}", read, {},
                     lambda fp: _write(wh, benchmark, judge, kind, path, fp), force=force, run_id=run_id)


def _write(wh: Warehouse, benchmark: str, judge: str, kind: str, path: Path, fp: str) -> StageOutput:
    lines = read_typed_lines(path, VerdictLine, 'verdict (instance_id, model, verdict "yes"|"no")')
    if not lines:
        raise ConfigError(f"{path}: no verdicts")
    unique = unique_lines(lines, lambda line: (line.instance_id, line.model), path, "response (instance, model)")
    instances = {instance_id for (instance_id,) in wh.query(
        "SELECT instance_id FROM instances WHERE benchmark = ?", [benchmark])}
    statuses = {(instance_id, model): status for instance_id, model, status in wh.query(
        "SELECT instance_id, model, status FROM responses WHERE benchmark = ?", [benchmark])}
    rows = []
    for (instance_id, model), (number, line) in unique.items():
        where = f"{path} line {number}"
        if instance_id not in instances:
            raise ConfigError(f"{where}: benchmark {benchmark!r} has no instance {instance_id!r}")
        status = statuses.get((instance_id, model))
        if status is None:
            raise ConfigError(f"{where}: model {model!r} has no response to instance {instance_id!r} of"
                              f" {benchmark!r} (run `babelbench eval` or `babelbench import responses` first)")
        if status != "ok":
            raise ConfigError(f"{where}: model {model!r}'s response to instance {instance_id!r} failed ({status}):"
                              " there is no answer to judge")
        if isinstance(line.verdict, str) and line.verdict not in VERDICTS:
            raise ConfigError(f'{where}: verdict is {line.verdict!r}, not "yes", "no", true or false')
        rows.append([benchmark, instance_id, model, judge, kind, VERDICTS[line.verdict], "ok",
                     f"a person's verdict: {path.name} line {number}", None, None, fp, None])
    with wh.transaction() as cur:
        cur.execute("DELETE FROM judgements WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        insert_rows(cur, "judgements", rows)
    yes = sum(row[5] == "yes" for row in rows)
    return StageOutput(rows=len(rows), message=f"{judge}: {len(rows)} {kind} verdicts ({yes} yes) on {benchmark}"
                                               f" from {path.name}")
