"""A recipe from a package outside the repository (examples/babelbench-mc), with no change to babelbench's files.

The package is installed into a scratch folder (``pip install --target``) that only the commands of this test see
(``PYTHONPATH``), so the rest of the suite runs without it.  Through the real command line: its migration is
applied and recorded, ``qa build`` runs its stage from the sample's ingested articles, ``instances build`` asks
it for instances, ``eval`` scores the baselines by its metric (the oracle right on every question, abstain on
none), the leaderboard splits a model's answers by its knowledge cutoff, ``rerun`` recomputes its stage, the DAG
and the rerun form show the stage, a newer dump rebuilds it, and a core migration added later leaves it working.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.sample.mirror import DEFAULT_DATE, EARLIER_DATE, build_live_mirror
from tasks.warehouse.db import Warehouse

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "babelbench-mc"
BABELBENCH = [sys.executable, "-m", "flows.cli"]
#: a core migration made after the plugin was written: a column each of the plugin's tables of items and instances
LATER_CORE_MIGRATION = """
import sys
from tasks.warehouse import migrations
original = migrations.available_migrations
added = migrations.Migration(999, "later_columns", "ALTER TABLE qa_items ADD COLUMN reviewed_by VARCHAR;"
                             " ALTER TABLE instances ADD COLUMN difficulty DOUBLE DEFAULT 0.5;")
migrations.available_migrations = lambda package="sql": original(package) + ([added] if package == "sql" else [])
from flows.cli import app
app(sys.argv[1:])
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed where only this test's commands look."""
    target = tmp_path_factory.mktemp("scratch-env")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(PACKAGE)], check=True, capture_output=True, timeout=300)
    return target


def _env(scratch: Path, home: Path) -> dict[str, str]:
    return os.environ | {"PYTHONPATH": os.pathsep.join([str(scratch), str(ROOT)]), "BABELBENCH_HOME": str(home),
                         "PREFECT_HOME": str(home.parent / "prefect"), "DO_NOT_TRACK": "1"}


def _run(scratch: Path, home: Path, *args: str, program: list[str] = BABELBENCH) -> str:
    done = subprocess.run([*program, *args], env=_env(scratch, home), cwd=home.parent, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _stage_statuses(output: str, stage: str) -> list[str]:
    """The status column of ``stage``'s rows in a command's stage table."""
    return [line.split()[2] for line in output.splitlines() if line.startswith(stage + " ")]


@pytest.mark.slow
def test_a_recipe_from_another_package_builds_evaluates_reruns_and_rebuilds(scratch: Path, tmp_path: Path) -> None:
    mirror, _ = build_live_mirror(tmp_path / "mirror")
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": name, "backend": "baseline", "model": name} for name in ("oracle", "abstain", "extractive")] + [
        {"name": "dated", "backend": "baseline", "model": "oracle", "knowledge_cutoff": "2026-10-15"}]}))
    source = mirror.root.as_uri()
    _run(scratch, home, "corpus", "ingest", "--lang", "en,de", "--source", source, "--date", EARLIER_DATE)

    built = _run(scratch, home, "qa", "build", "--recipe", "mc", "--langs", "en,de", "--set", "per_lang=4",
                 "--no-prescreen")
    assert _stage_statuses(built, "mc-questions") == ["computed", "computed"]
    with Warehouse(home, read_only=True) as wh:
        assert wh.query("SELECT namespace, version, name FROM plugin_migrations") == [("mc", 1, "mc_options")]
        items = wh.query_dicts("SELECT item_id, answer, extra FROM qa_items WHERE benchmark = 'mc' ORDER BY 1")
        options = wh.query("SELECT item_id, letter, title FROM mc_options WHERE correct ORDER BY 1")
    assert len(items) == 8 and all(json.loads(item["extra"])["options"][ord(item["answer"]) - 65] == title
                                   for item, (_, _, title) in zip(items, options, strict=True))

    _run(scratch, home, "instances", "build", "--benchmark", "mc")
    _run(scratch, home, "eval", "--benchmark", "mc", "--models", "oracle,abstain,extractive,dated")
    board = json.loads(_run(scratch, home, "leaderboard", "--benchmark", "mc", "--format", "json"))
    overall = {(r["model"], r["setting"]): r for r in board if r["lang"] == "all" and r["subset"] == "all"}
    for setting in ("closed_book", "passage"):
        assert overall[("oracle", setting)]["value"] == 100.0 and overall[("oracle", setting)]["n"] == 8
        assert overall[("abstain", setting)]["value"] == 0.0
    # its scorer from the command line, whichever package it comes from: read, not written
    scored = json.loads(_run(scratch, home, "score", "benchmark", "--benchmark", "mc", "--model", "abstain", "--json"))
    assert scored["recipe"] == "mc" and {(r["setting"], r["value"]) for r in scored["scores"] if r["lang"] == "all"} \
        == {("closed_book", 0.0), ("passage", 0.0)}

    # the model with a knowledge cutoff has its accuracy split by when each question's article appeared; the
    # articles of the sample's earlier dump are all before its cutoff (2026-10-15), so are all 8 questions
    before = {r["model"]: r for r in board if r["lang"] == "all" and r["subset"] == "window:before_cutoff"
              and r["setting"] == "closed_book"}
    assert before["dated"]["n"] == 8 and before["dated"]["value"] == 100.0
    assert before["oracle"]["n"] == 0  # no cutoff: no question is known to be before it

    rerun = _run(scratch, home, "rerun", "--stage", "mc-questions", "--scope", "mc")
    assert _stage_statuses(rerun, "mc-questions") == ["computed", "computed"]

    shown = _run(scratch, home, "-c", "from deployments.docs import dag_block; from flows.rerun import RerunParams;"
                 " import json; print(dag_block());"
                 " print(json.dumps(RerunParams.model_json_schema()['properties']['stage']))", program=[sys.executable])
    assert 's_documents --> s_mc_questions' in shown and 's_mc_questions --> s_qa_prescreen' in shown
    assert '"mc-questions"' in shown.splitlines()[-1]  # in the rerun form's enum of stages

    # a newer dump of English changes its articles: its cell rebuilds, German's is current
    _run(scratch, home, "corpus", "ingest", "--lang", "en", "--source", source, "--date", DEFAULT_DATE)
    again = _run(scratch, home, "qa", "build", "--recipe", "mc", "--langs", "en,de", "--set", "per_lang=4",
                 "--no-prescreen")
    assert sorted(_stage_statuses(again, "mc-questions")) == ["cached", "computed"]

    # a core migration added after the plugin was written leaves its writers working
    later = [sys.executable, "-c", LATER_CORE_MIGRATION]
    rebuilt = _run(scratch, home, "qa", "build", "--recipe", "mc", "--langs", "en,de", "--set", "per_lang=4",
                   "--no-prescreen", "--force", "mc-questions", program=later)
    assert _stage_statuses(rebuilt, "mc-questions") == ["computed", "computed"]
    _run(scratch, home, "instances", "build", "--benchmark", "mc", "--force", "instances", program=later)
    with Warehouse(home, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM qa_items WHERE benchmark = 'mc' AND reviewed_by IS NULL") == 8
        assert wh.query("SELECT DISTINCT difficulty FROM instances WHERE benchmark = 'mc'") == [(0.5,)]
