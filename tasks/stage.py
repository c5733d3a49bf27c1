"""How every stage runs: fingerprint, cache check, atomic output, a row in ``artifacts``.

The warehouse's ``artifacts`` table is the cache: a stage run whose
fingerprint is already the *current* computed output of its cell is a cache
hit (recorded as a ``cached`` row) and does no work. Looking the fingerprint
up in the warehouse, rather than in a separate result store, means a deleted
or swapped warehouse can never be served stale results, and a cell that was
recomputed with another config and then switched back recomputes correctly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from tasks.placement import DeviceConfig
from tasks.resources import resource_failure
from tasks.text.languages import rule_digest
from tasks.version import code_version
from tasks.warehouse.db import ARTIFACTS_GUARD, Warehouse, guard
from tasks.warehouse.lake import settled_writes, sweep_abandoned
from tasks.warehouse.replay import StaleReads

log = logging.getLogger(__name__)

Status = Literal["computed", "cached", "failed"]
#: how many times a cell is computed when its commit keeps meeting changes other workers made to what it read
CELL_ATTEMPTS = 3


class StageConfig(BaseModel):
    """Typed, frozen config of a stage: every field is read by the stage and enters its fingerprint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def fingerprint_fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ReadFields(StageConfig):
    """The fields of a larger typed config that one stage reads.

    A recipe has one typed config (one form in the Prefect UI); each stage's
    fingerprint covers only the fields that stage reads, so changing, say, the
    split sizes recomputes the qrels but not the retrieval.  Where a model runs
    (a :class:`DeviceConfig` field) is never read: moving a stage to a GPU must
    not recompute it.
    """

    values: dict[str, Any]

    @classmethod
    def of(cls, config: BaseModel, *names: str, **extra: Any) -> ReadFields:
        placement = {name for name in names if isinstance(getattr(config, name), DeviceConfig)}
        return cls(values=config.model_dump(mode="json", include=set(names) - placement) | extra)

    def fingerprint_fields(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True)
class Stage:
    """A stage's identity (declared in :mod:`tasks.catalog`). Bump ``version`` when its output would change for the
    same inputs.

    ``upstream``: the stages it reads; ``writes``: the tables (or home folders, ending in ``/``) it writes;
    ``flow``: the flow that runs it ("" for a stage a command runs); ``cell``: how its cells are named, a format
    string over the cell's parts.
    """

    name: str
    version: int
    upstream: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    flow: str = ""
    cell: str = ""

    def cell_of(self, **parts: object) -> str:
        """The name of one cell of this stage, from its parts (``INFERENCE.cell_of(benchmark=…, setting=…, …)``)."""
        return self.cell.format(**parts)


class StageRef(BaseModel):
    """The small reference a stage task returns instead of its data."""

    model_config = ConfigDict(frozen=True)

    stage: str
    cell: str
    fingerprint: str
    status: Status
    rows: int
    issues: int = 0
    message: str = ""


@dataclass
class StageOutput:
    """What a stage's compute function reports back: rows written and per-item issues."""

    rows: int
    issues: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""


_CELL_PARTS = re.compile(r"[:/>,]")


def cell_rules(cell: str) -> dict[str, str]:
    """The rule digests of the languages a cell names (``demo:en>km`` names en and km), by wiki code.

    A cell in a language reads that language's rule (segmentation, truncation,
    analysis, disambiguation markers), so the rule is part of its fingerprint:
    an override or a regenerated table recomputes exactly that language's
    cells, and through their changed fingerprints everything downstream.
    """
    return {part: rule for part in _CELL_PARTS.split(cell) if (rule := rule_digest(part))}


def fingerprint(stage: Stage, cell: str, config: Mapping[str, Any], inputs: Mapping[str, str]) -> str:
    """hash(stage name, stage version, cell, config fields read, input fingerprints, rules of the cell's languages)."""
    payload = {"stage": stage.name, "version": stage.version, "cell": cell, "config": dict(config), "inputs": dict(inputs)}
    rules = cell_rules(cell)
    if rules:
        payload["rules"] = rules
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def digest(values: object) -> str:
    """A stable hash of JSON-able values, for a fingerprint field that stands for data rather than config."""
    return hashlib.sha256(json.dumps(values, default=str, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def rows_digest(wh: Warehouse, sql: str, params: list[Any] | None = None) -> str:
    """The digest of the upstream rows a cell reads (their ids and statuses, say), for its fingerprint.

    An upstream cell that retried its unfinished items keeps its fingerprint
    (same config, same inputs) while its rows change — failed calls became
    items; so a cell must also fingerprint what it read, or it would stay a
    cache hit over rows that no longer exist.  ``sql`` must order its rows.
    """
    return digest(wh.query(sql, params or []))


def current_fingerprint(wh: Warehouse, stage: str, cell: str) -> tuple[str, int, int, str] | None:
    """(fingerprint, rows, issues, message) of the cell's latest computed run, if any."""
    rows = wh.query(
        "SELECT fingerprint, rows, issues, coalesce(message, '') FROM artifacts"
        " WHERE stage = ? AND cell = ? AND status = 'computed' ORDER BY artifact_id DESC LIMIT 1",
        [stage, cell],
    )
    return rows[0] if rows else None


def current_ref(wh: Warehouse, stage: str, cell: str) -> StageRef | None:
    """The reference of a cell's current output, for a flow that consumes another flow's stage."""
    current = current_fingerprint(wh, stage, cell)
    if current is None:
        return None
    fp, rows, issues, message = current
    return StageRef(stage=stage, cell=cell, fingerprint=fp, status="cached", rows=rows, issues=issues, message=message)


def run_stage(
    wh: Warehouse,
    stage: Stage,
    cell: str,
    config: StageConfig,
    inputs: Mapping[str, StageRef],
    compute: Callable[[str], StageOutput],
    *,
    force: bool = False,
    run_id: str | None = None,
) -> StageRef:
    """Run one cell of a stage unless its fingerprint is already current; record the outcome.

    ``compute`` receives the fingerprint (to stamp rows and name shard
    directories) and must write its outputs atomically; a failure is recorded
    as a ``failed`` row with the error message and re-raised.
    """
    config_fields = config.fingerprint_fields()
    input_fps = {name: ref.fingerprint for name, ref in inputs.items()}
    fp = fingerprint(stage, cell, config_fields, input_fps)
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    current = None if force else current_fingerprint(wh, stage.name, cell)
    if current is not None and current[0] == fp:
        _, rows, issues, message = current
        _record(wh, stage, cell, fp, config_fields, input_fps, "cached", rows, issues, message, started, clock, run_id)
        log.info("%s[%s]: cache hit (%s)", stage.name, cell, fp[:12])
        return StageRef(stage=stage.name, cell=cell, fingerprint=fp, status="cached", rows=rows, issues=issues, message=message)
    log.info("%s[%s]: computing (%s)", stage.name, cell, fp[:12])
    _sweep_once(wh, run_id)
    what = f"{stage.name}[{cell}]"
    for attempt in range(1, CELL_ATTEMPTS + 1):
        try:
            with settled_writes(wh, what), wh.cell_commit(what):
                output = compute(fp)
                if output.issues:
                    _record_issues(wh, stage.name, cell, fp, output.issues)
                _record(wh, stage, cell, fp, config_fields, input_fps, "computed", output.rows, len(output.issues),
                        output.message, started, clock, run_id)
            break
        except StaleReads as exc:
            current = current_fingerprint(wh, stage.name, cell)
            if current is not None and current[0] == fp:  # another worker committed this very cell meanwhile
                _, rows, issues, message = current
                _record(wh, stage, cell, fp, config_fields, input_fps, "cached", rows, issues, message, started, clock,
                        run_id)
                log.info("%s: computed by another worker at the same time; its result is kept", what)
                return StageRef(stage=stage.name, cell=cell, fingerprint=fp, status="cached", rows=rows, issues=issues,
                                message=message)
            if attempt == CELL_ATTEMPTS:
                _record(wh, stage, cell, fp, config_fields, input_fps, "failed", None, 0, f"{type(exc).__name__}: {exc}",
                        started, clock, run_id)
                raise
            log.info("%s: %s; computing it again", what, exc)
        except Exception as exc:
            exhausted = resource_failure(exc, what, sorted(cell_rules(cell)), wh.home, wh.lake_root)
            failure = exhausted or exc
            _record(wh, stage, cell, fp, config_fields, input_fps, "failed", None, 0,
                    f"{type(failure).__name__}: {failure}", started, clock, run_id)
            if exhausted is not None:
                raise exhausted from exc
            raise
    return StageRef(
        stage=stage.name, cell=cell, fingerprint=fp, status="computed",
        rows=output.rows, issues=len(output.issues), message=output.message,
    )


_swept: set[tuple[str, str | None]] = set()
_swept_lock = threading.Lock()


def _sweep_once(wh: Warehouse, run_id: str | None) -> None:
    """Before a flow run's first computation: delete the lake folders of runs that died mid-stage.

    Once per flow run (per process without a run id): a killed process could
    not clean up after itself, and its folders are found by the marker it left.
    """
    key = (str(wh.home.resolve()), run_id)
    with _swept_lock:
        if key in _swept:
            return
        _swept.add(key)
    try:
        sweep_abandoned(wh)
    except Exception as exc:  # noqa: BLE001 - garbage collection must never fail a stage
        log.warning("could not sweep abandoned lake folders under %s: %s", wh.lake_root, exc)


def _record(
    wh: Warehouse, stage: Stage, cell: str, fp: str, config: Mapping[str, Any], inputs: Mapping[str, str],
    status: Status, rows: int | None, issues: int, message: str, started: datetime, clock: float, run_id: str | None,
) -> None:
    seconds = time.perf_counter() - clock
    with wh.transaction() as cur:
        guard(cur, ARTIFACTS_GUARD)  # on a DuckLake, commits that record outcomes are serialised: ids in commit order
        cur.execute(
            "INSERT INTO artifacts (artifact_id, run_id, stage, stage_version, cell, fingerprint, inputs, config,"
            " code_version, status, rows, issues, message, started_at, finished_at, seconds)"
            " SELECT coalesce(max(artifact_id), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM artifacts",
            [run_id, stage.name, stage.version, cell, fp, json.dumps(dict(inputs)), json.dumps(dict(config), default=str),
             code_version(), status, rows, issues, message or None, started.replace(tzinfo=None),
             datetime.now(timezone.utc).replace(tzinfo=None), seconds],
        )


def _record_issues(wh: Warehouse, stage: str, cell: str, fp: str, issues: list[dict[str, Any]]) -> None:
    with wh.transaction() as cur:
        cur.executemany(
            "INSERT INTO ingest_issues VALUES (?, ?, ?, ?, ?, ?, ?)",
            [[fp, stage, cell, i.get("source"), i.get("position"), i.get("item"), i["reason"]] for i in issues],
        )
