"""The command line as a new user meets it: commands in workflow order, ``--force`` naming real stages, plain flags."""

from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

from flows.cli import app
from tasks.catalog import stages

WORKFLOW_ORDER = ["corpus", "clir", "qa", "translate", "instances", "review", "sql", "demo"]


def _help(*path: str) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"}, terminal_width=400)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under a (Typer or click) group."""
    found = []
    for name, command in getattr(group, "commands", {}).items():
        found.append((*prefix, name))
        found += _commands(command, (*prefix, name))
    return found


def test_top_level_help_lists_commands_in_workflow_order() -> None:
    text = _help()
    positions = [text.find(f" {name} ") for name in WORKFLOW_ORDER]
    assert -1 not in positions, dict(zip(WORKFLOW_ORDER, positions))
    assert positions == sorted(positions), dict(zip(WORKFLOW_ORDER, positions))


def _listed_stages(text: str) -> list[str]:
    match = re.search(r"Stages: ([a-z, -]+)\.", text)
    assert match, text
    return [name.strip() for name in match.group(1).split(",")]


def test_force_help_names_the_stages_each_command_runs_and_reads() -> None:
    # by hand from the pipeline: what each command runs, and the stages those read
    assert _listed_stages(_help("corpus", "ingest")) == ["download", "documents", "appearance", "sitelinks"]
    assert _listed_stages(_help("clir", "build")) == ["documents", "index", "retrieval", "qrels"]
    qa = ["documents", "appearance", "sitelinks", "index", "qa-candidates", "qa-generate", "xrag-pairs", "xrag-related",
          "xrag-questions", "qa-prescreen", "translate", "distractors", "instances"]
    for path in [("qa", "build"), ("translate",), ("instances", "build")]:
        assert _listed_stages(_help(*path)) == qa, path
    assert _listed_stages(_help("eval")) == ["instances", "import", "inference", "judging", "scoring"]
    assert set(_listed_stages(_help("arena"))) <= {stage.name for stage in stages()}


def test_no_command_shows_a_type_placeholder_for_a_flag() -> None:
    paths = _commands(typer.main.get_command(app))
    assert len(paths) > len(WORKFLOW_ORDER)
    for path in paths:
        text = _help(*path)
        assert "<bool>" not in text.lower() and "BOOLEAN" not in text, (path, text)
