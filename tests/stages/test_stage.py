"""Stage conventions: fingerprints, warehouse-backed cache hits, force, failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.catalog import descendants
from tasks.errors import ConfigError
from tasks.stage import Stage, StageConfig, StageOutput, StageRef, fingerprint, run_stage
from tasks.warehouse.db import Warehouse

STAGE = Stage("count", 1)


class CountConfig(StageConfig):
    limit: int


def test_fingerprint_depends_on_every_part_and_not_on_key_order() -> None:
    base = fingerprint(STAGE, "en", {"a": 1, "b": 2}, {"up": "x"})
    assert base == fingerprint(STAGE, "en", {"b": 2, "a": 1}, {"up": "x"})
    variants = {
        fingerprint(Stage("count", 2), "en", {"a": 1, "b": 2}, {"up": "x"}),
        fingerprint(STAGE, "ja", {"a": 1, "b": 2}, {"up": "x"}),
        fingerprint(STAGE, "en", {"a": 1, "b": 3}, {"up": "x"}),
        fingerprint(STAGE, "en", {"a": 1, "b": 2}, {"up": "y"}),
    }
    assert base not in variants and len(variants) == 4


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fp: str) -> StageOutput:
        self.calls += 1
        return StageOutput(rows=7)


def test_rerun_is_a_cache_hit_and_force_recomputes(tmp_path: Path) -> None:
    compute = Counter()
    with Warehouse(tmp_path) as wh:
        first = run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, compute)
        second = run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, compute)
        forced = run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, compute, force=True)
        statuses = [r[0] for r in wh.query("SELECT status FROM artifacts ORDER BY artifact_id")]
    assert (first.status, second.status, forced.status) == ("computed", "cached", "computed")
    assert second.rows == 7 and second.fingerprint == first.fingerprint
    assert compute.calls == 2
    assert statuses == ["computed", "cached", "computed"]


def test_switching_config_back_recomputes_because_the_cell_holds_the_other_output(tmp_path: Path) -> None:
    compute = Counter()
    with Warehouse(tmp_path) as wh:
        run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, compute)
        run_stage(wh, STAGE, "en", CountConfig(limit=2), {}, compute)
        back = run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, compute)
    assert back.status == "computed" and compute.calls == 3


def test_an_upstream_change_invalidates_the_downstream_cell(tmp_path: Path) -> None:
    compute = Counter()
    up_a = StageRef(stage="up", cell="en", fingerprint="a" * 64, status="computed", rows=1)
    up_b = up_a.model_copy(update={"fingerprint": "b" * 64})
    with Warehouse(tmp_path) as wh:
        run_stage(wh, STAGE, "en", CountConfig(limit=1), {"up": up_a}, compute)
        again = run_stage(wh, STAGE, "en", CountConfig(limit=1), {"up": up_a}, compute)
        changed = run_stage(wh, STAGE, "en", CountConfig(limit=1), {"up": up_b}, compute)
    assert (again.status, changed.status) == ("cached", "computed")


def test_a_failure_is_recorded_with_its_message_and_reraised(tmp_path: Path) -> None:
    def boom(fp: str) -> StageOutput:
        raise ValueError("dump.xml at line 3: bad page")

    with Warehouse(tmp_path) as wh:
        with pytest.raises(ValueError):
            run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, boom)
        assert wh.query("SELECT status, message FROM artifacts") == [("failed", "ValueError: dump.xml at line 3: bad page")]
        # a failed run is not a cache entry: the next run computes
        assert run_stage(wh, STAGE, "en", CountConfig(limit=1), {}, Counter()).status == "computed"


def test_force_reaches_descendants_only() -> None:
    stages = [Stage("download", 1), Stage("documents", 1, ("download",)), Stage("sitelinks", 1, ("documents",)),
              Stage("other", 1)]
    assert descendants(stages, ["documents"]) == {"documents", "sitelinks"}
    assert descendants(stages, ["download"]) == {"download", "documents", "sitelinks"}
    with pytest.raises(ConfigError, match="unknown stage"):
        descendants(stages, ["nope"])
