"""The generated docs — the README's DAG picture and docs/cli.md — are current; their generator draws what it should."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, get_args

import pytest
import typer

from deployments.docs import (
    CLI_REFERENCE,
    DEVELOPMENT,
    README,
    cli_reference,
    dag_mermaid,
    layer_contract,
    layers_mermaid,
    rendered,
    replace_block,
)
from flows.rerun import OWNERS, StageName
from tasks.catalog import FLOWS, stages
from tasks.stage import Stage

# -- the files in the repository are what `make docs` writes ---------------------------------------------------


@pytest.mark.parametrize("path", [README, DEVELOPMENT, CLI_REFERENCE], ids=lambda p: p.name)
def test_generated_file_is_current(path: Path) -> None:
    expected = rendered()[path]
    assert path.read_text(encoding="utf-8") == expected, f"{path.name} is stale: run `make docs`"


def test_the_rerun_form_offers_every_stage_a_flow_runs_and_every_flow_has_an_owner() -> None:
    # stages run only by a command (import responses, import verdicts) have no owning flow to rerun
    assert set(get_args(StageName)) == {stage.name for stage in stages() if stage.flow}
    assert {owner.flow for owner in OWNERS} == set(FLOWS)


def test_every_stage_says_what_it_writes_and_every_table_exists(home: Path) -> None:
    from tasks.home import open_warehouse

    with open_warehouse(home) as wh:
        relations = {name for (name,) in wh.query("SELECT table_name FROM information_schema.tables")}
    named = {table for stage in stages() for table in stage.writes if not table.endswith("/")}
    assert all(stage.writes for stage in stages()) and named - relations == set()


def test_a_stage_reads_only_stages_of_the_catalog_and_the_catalog_has_no_cycle() -> None:
    names = [stage.name for stage in stages()]
    assert len(names) == len(set(names))
    assert {upstream for stage in stages() for upstream in stage.upstream} <= set(names)
    done: set[str] = set()
    for stage in stages():  # workflow order: every stage after the stages it reads
        assert set(stage.upstream) <= done, stage.name
        done.add(stage.name)


def test_the_readme_shows_the_dag_as_mermaid() -> None:
    readme = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- BEGIN GENERATED dag.*?-->\n(.*?)<!-- END GENERATED dag -->", readme, re.S)
    assert block and block.group(1).startswith("```mermaid\nflowchart ")
    # a stage of each recipe's path, with an edge the stage definitions declare (tasks/*/stages.py)
    for edge in ("s_download --> s_documents", "s_documents --> s_index", "s_qa_prescreen --> s_translate",
                 "s_inference --> s_judging", "s_features --> s_arena_surrogate"):
        assert edge in block.group(1)


# -- the generator ------------------------------------------------------------------------------------------------


def test_a_dag_is_drawn_with_its_flows_tables_and_edges() -> None:
    stages = [Stage("fetch", 1, (), ("files/",), "ingest"), Stage("parse-it", 1, ("fetch",), ("docs", "issues"), "ingest"),
              Stage("loose", 1, ("parse-it", "elsewhere"), ("out",), "")]
    # by hand: flows in the order given, then the stages no flow runs outside any subgraph; an upstream that is not
    # a stage ("elsewhere") draws no edge; hyphens become underscores in ids
    assert dag_mermaid(stages, ("ingest",)) == (
        "flowchart TD\n"
        '  subgraph f_ingest["flow: ingest"]\n'
        '    s_fetch["<b>fetch</b><br/><i>files/</i>"]\n'
        '    s_parse_it["<b>parse-it</b><br/><i>docs<br/>issues</i>"]\n'
        "  end\n"
        '  s_loose["<b>loose</b><br/><i>out</i>"]\n'
        "  s_fetch --> s_parse_it\n"
        "  s_parse_it --> s_loose\n"
    )


def test_the_layers_are_drawn_top_first_with_their_kind_of_siblings() -> None:
    assert layers_mermaid(["flows", "tasks.a : tasks.b", "tasks.c | tasks.d"]) == (
        'flowchart TD\n  l0["flows"]\n  l1["a, b"]\n  l2["c | d"]\n  l0 --> l1\n  l1 --> l2\n')
    # the contract drawn is the one lint-imports checks: every package of tasks has its layer
    drawn = {member.strip() for layer in layer_contract() for member in re.split(r"[|:]", layer)}
    packages = {f"tasks.{path.stem if path.is_file() else path.name}" for path in (README.parent / "tasks").iterdir()
                if (path.is_dir() and (path / "__init__.py").exists()) or (path.suffix == ".py" and path.stem != "__init__")}
    assert packages <= drawn


def test_a_stage_without_tables_is_refused() -> None:
    with pytest.raises(KeyError, match=r"\['b'\]"):
        dag_mermaid([Stage("a", 1, (), ("t",), "f"), Stage("b", 1, ("a",), (), "f")], ("f",))


def test_a_stale_or_missing_block_is_rewritten_or_named() -> None:
    text = "intro\n<!-- BEGIN GENERATED dag: make docs rewrites this block; do not edit -->\nold picture\n" \
           "<!-- END GENERATED dag -->\nafter\n"
    assert replace_block(text, "dag", "new picture\n", where="R.md") == text.replace("old picture", "new picture")
    with pytest.raises(ValueError, match="R.md: no generated block 'dag'"):
        replace_block("no markers here\n", "dag", "x\n", where="R.md")


def test_the_cli_reference_lists_commands_options_defaults_and_help() -> None:
    app = typer.Typer(help="A tool.", rich_markup_mode=None)
    group = typer.Typer(help="Things to build.", rich_markup_mode=None)
    app.add_typer(group, name="build")

    @app.callback()
    def main(home: Annotated[str, typer.Option(help="Where.", envvar="TOOL_HOME")] = ".") -> None:
        """Top level."""

    @group.command("index")
    def index(
        name: Annotated[str, typer.Option(help="The index | its name.")],
        top_k: Annotated[int, typer.Option(help="Hits.")] = 100,
        fast: Annotated[bool, typer.Option("--fast", help="Skip checks.")] = False,
        mode: Annotated[Literal["a", "b"], typer.Option(help="Mode.")] = "a",
    ) -> None:
        """Build the index.

        Second paragraph."""

    text = cli_reference(app)
    # by hand from the definitions above: one section per command in order, each option with its default
    assert re.findall(r"^## (.+)$", text, re.M) == ["babelbench", "babelbench build", "babelbench build index"]
    assert "| `--home <str>` | `.` | Where. (env `TOOL_HOME`) |" in text
    assert "Subcommands: `index`." in text
    assert "Build the index.\n\nSecond paragraph.\n" in text
    assert "| `--name <str>` | required | The index \\| its name. |" in text
    assert "| `--top-k <int>` | `100` | Hits. |" in text
    assert "| `--fast` | off | Skip checks. |" in text
    assert re.search(r"^\| `--mode [^`]*` \| `a` \| Mode\. \|$", text, re.M)
    assert "```\nbabelbench build index [OPTIONS]\n```" in text


def test_the_cli_reference_has_every_command_of_babelbench() -> None:
    text = CLI_REFERENCE.read_text(encoding="utf-8")
    # commands named by hand from flows/*_cli.py and flows/cli.py
    for command in ("corpus ingest", "clir build", "qa build", "translate", "instances build", "review import",
                    "import mkqa", "models add", "eval", "features", "arena", "leaderboard", "report", "rerun",
                    "backfill", "score arena", "sql", "demo"):
        assert f"\n## babelbench {command}\n" in text, command
    assert "| `--top-k <int>` | `100` | Hits per title query, and padding size. |" in text  # clir build
