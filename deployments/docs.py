"""The generated parts of the documentation: the README's DAG picture and ``docs/cli.md``.

``make docs`` (``python -m deployments.docs``) rewrites both from the code, and
``tests/test_docs_generated.py`` fails when either differs from what this module
would write, so neither can drift from the stages or the command line:

- the DAG is read from the stage definitions themselves — every
  ``Stage("name", version, upstream=(…))`` in ``tasks/`` and ``flows/`` — and
  grouped by the flow that owns each stage (``flows.rerun.OWNERS``); what a
  stage writes is not declared in code, so :data:`STAGE_TABLES` says it, next to
  the picture it feeds, and the test checks that every stage has an entry and
  every entry names a real table or view;
- the CLI reference walks the Typer app: every command, argument and option,
  with its default and help text.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Typer vendors click; its classes are only named in annotations here
    from typer._click.core import Command, Context, Parameter

REPO = Path(__file__).resolve().parents[1]
#: Where stages are defined: the stage library and the flows that declare placeholder upstreams.
STAGE_ROOTS = ("tasks", "flows")
README = REPO / "README.md"
CLI_REFERENCE = REPO / "docs" / "cli.md"
DAG_BLOCK = "dag"

#: What each stage writes: warehouse tables and views (``documents`` is the view over the lake's ``documents_raw``),
#: or, ending in ``/``, a folder of the home.  Checked against the stages and the warehouse's schema by
#: tests/test_docs_generated.py.
STAGE_TABLES: Mapping[str, tuple[str, ...]] = {
    "download": ("dumps",),
    "documents": ("documents", "ingest_issues"),
    "sitelinks": ("sitelinks",),
    "index": ("indexes/",),
    "retrieval": ("retrieval_hits",),
    "qrels": ("clir_qrels", "clir_collections"),
    "qa-candidates": ("qa_candidates",),
    "qa-generate": ("qa_items",),
    "xrag-pairs": ("related_pairs",),
    "xrag-related": ("related_pairs",),
    "xrag-questions": ("qa_steps", "qa_items"),
    "qa-prescreen": ("qa_reviews",),
    "translate": ("translations",),
    "distractors": ("distractors",),
    "instances": ("instances",),
    "import": ("qa_benchmarks", "qa_items", "instances", "documents", "clir_qrels"),
    "import-responses": ("responses",),
    "import-verdicts": ("judgements",),
    "inference": ("responses",),
    "judging": ("judgements",),
    "scoring": ("leaderboard",),
    "features": ("features",),
    "arena-judging": ("battles",),
    "arena-ratings": ("arena_ratings",),
    "arena-surrogate": ("surrogate_reports", "arena_ratings"),
}


@dataclass(frozen=True)
class StageDefinition:
    """A stage as the code defines it: its name, the stages it reads, and where it is defined."""

    name: str
    upstream: tuple[str, ...]
    defined_at: tuple[str, ...]


def _literal(node: ast.expr, where: str) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{where}: a Stage's name and upstream must be literals for the DAG picture,"
                         f" found {ast.unparse(node)!r}") from None


def stage_definitions(repo: Path = REPO, roots: Iterable[str] = STAGE_ROOTS) -> dict[str, StageDefinition]:
    """Every ``Stage(...)`` call in the sources, by name, read from the syntax tree (nothing is imported).

    A flow may declare an upstream stage it reads again as a bare placeholder
    (``Stage("documents", 1)`` in the CLIR and QA flows), so definitions of one
    name are merged: the union of their upstreams, every place they occur.
    """
    found: dict[str, tuple[set[str], list[str]]] = {}
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Stage"):
                    continue
                where = f"{path.relative_to(repo)}:{node.lineno}"
                if not node.args:
                    raise ValueError(f"{where}: Stage(...) without a name")
                name = _literal(node.args[0], where)
                upstream: object = ()
                for keyword in node.keywords:
                    if keyword.arg == "upstream":
                        upstream = _literal(keyword.value, where)
                if len(node.args) > 2:
                    upstream = _literal(node.args[2], where)
                if not isinstance(name, str) or not isinstance(upstream, tuple):
                    raise ValueError(f"{where}: Stage(name: str, version, upstream: tuple) expected")
                ups, places = found.setdefault(name, (set(), []))
                ups.update(upstream)
                places.append(where)
    return {name: StageDefinition(name, tuple(sorted(ups)), tuple(places)) for name, (ups, places) in found.items()}


def _node(name: str, prefix: str = "s_") -> str:
    """A Mermaid node id for a stage (or, with prefix ``f_``, a flow): names hold hyphens, ids may not."""
    return prefix + re.sub(r"\W", "_", name)


def dag_mermaid(stages: Mapping[str, StageDefinition], owners: Mapping[str, str],
                tables: Mapping[str, tuple[str, ...]] = STAGE_TABLES) -> str:
    """The DAG as a Mermaid flowchart: one box per stage with the tables it writes, grouped by owning flow.

    ``owners`` maps a stage to the flow that runs it (a subgraph); the order of
    flows and stages follows ``owners``, so the picture reads in workflow order.
    A stage without an entry in ``tables`` is an error: the picture would hide
    what it writes.
    """
    missing = sorted(set(stages) - set(tables))
    if missing:
        raise KeyError(f"stages without an entry in deployments/docs.py STAGE_TABLES: {missing}")
    flows: dict[str, list[str]] = {}
    for stage in [*owners, *sorted(set(stages) - set(owners))]:
        if stage in stages:
            flows.setdefault(owners.get(stage, ""), []).append(stage)
    lines = ["flowchart TD"]
    for flow, members in flows.items():
        indent = "  "
        if flow:
            lines.append(f'  subgraph {_node(flow, "f_")}["flow: {flow}"]')
            indent = "    "
        for stage in members:
            written = "<br/>".join(tables[stage])
            lines.append(f'{indent}{_node(stage)}["<b>{stage}</b><br/><i>{written}</i>"]')
        if flow:
            lines.append("  end")
    for stage in (s for members in flows.values() for s in members):
        for upstream in stages[stage].upstream:
            if upstream in stages:
                lines.append(f"  {_node(upstream)} --> {_node(stage)}")
    return "\n".join(lines) + "\n"


def stage_owners() -> dict[str, str]:
    """Stage name → the flow that owns it, in the order the rerun flow lists its owners (workflow order)."""
    from flows.rerun import OWNERS

    return {stage: owner.flow for owner in OWNERS for stage in owner.stages}


def dag_block() -> str:
    """The README's DAG picture: a fenced Mermaid block GitHub renders."""
    return "```mermaid\n" + dag_mermaid(stage_definitions(), stage_owners()) + "```\n"


def replace_block(text: str, name: str, body: str, *, where: str) -> str:
    """``text`` with the generated block ``name`` (between its BEGIN/END comments) replaced by ``body``."""
    begin = f"<!-- BEGIN GENERATED {name}: make docs rewrites this block; do not edit -->\n"
    end = f"<!-- END GENERATED {name} -->"
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"{where}: no generated block {name!r} (expected the lines {begin.strip()!r} … {end!r})")
    return text[:start + len(begin)] + body + text[stop:]


# -- the CLI reference ------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(param: Parameter) -> str:
    if param.required:
        return "required"
    default = param.default
    if getattr(param, "is_flag", False):
        return "on" if default else "off"
    if default is None or default == () or default == []:
        return "—"
    return f"`{default}`"


def _param_row(param: Parameter, ctx: Context) -> str:
    """One option or argument: its declaration as ``--help`` prints it, its default, its help (and variable)."""
    shown, _ = param.get_help_record(ctx)
    help_text = param.help or ""
    envvar = param.envvar if isinstance(param.envvar, str) else None
    if envvar:
        help_text += f" (env `{envvar}`)"
    if param.multiple and "repeatable" not in help_text.lower():
        help_text += " Repeatable."
    return f"| `{_cell(shown)}` | {_default(param)} | {_cell(help_text.strip()) or '—'} |"


def _params_table(command: Command, ctx: Context) -> list[str]:
    shown = [p for p in command.get_params(ctx) if not p.hidden and p.name != "help"]
    if not shown:
        return []
    return ["| option | default | what |", "|---|---|---|", *(_param_row(p, ctx) for p in shown), ""]


def _is_group(command: Command) -> bool:
    return hasattr(command, "list_commands")


def _context(command: Command, parent: Context | None, name: str) -> Context:
    return command.context_class(command, parent=parent, info_name=name)


def command_tree(root: Command, ctx: Context, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every visible command path under a group, depth first in the group's own (workflow) order."""
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*path, name), command
        if _is_group(command):
            yield from command_tree(command, _context(command, ctx, name), (*path, name))


def cli_reference(app: object | None = None) -> str:
    """``docs/cli.md``: every command of the Typer app in workflow order, with its options, defaults and help."""
    root, ctx = cli_root(app)
    lines = [
        "# Command-line reference",
        "",
        "<!-- Generated by `make docs` (python -m deployments.docs) from the Typer app in flows/cli.py; do not edit:"
        " tests/test_docs_generated.py fails when it is stale. -->",
        "",
        "After this page you can look up every `babelbench` command, its options, their defaults and what they do."
        " The guides in this folder say when to use which; `babelbench COMMAND --help` prints the same text.",
        "",
        "## babelbench",
        "",
        *_paragraphs(root.help or ""),
        "Global options (before the command):",
        "",
        *_params_table(root, ctx),
        "Commands: " + ", ".join(f"[`{' '.join(path)}`](#{_anchor(path)})" for path, _ in command_tree(root, ctx)),
        "",
    ]
    contexts = {(): ctx}
    for path, command in command_tree(root, ctx):
        sub_ctx = contexts[path] = _context(command, contexts[path[:-1]], path[-1])
        lines += [f"## babelbench {' '.join(path)}", ""]
        lines += _paragraphs(command.help or "")
        if _is_group(command):
            lines += ["Subcommands: " + ", ".join(f"`{' '.join(sub)}`" for sub, _ in command_tree(command, sub_ctx))
                      + ".", ""]
            continue
        usage = " ".join(command.collect_usage_pieces(sub_ctx))
        lines += ["```", f"babelbench {' '.join(path)} {usage}".rstrip(), "```", ""]
        lines += _params_table(command, sub_ctx)
    return "\n".join(lines).rstrip() + "\n"


def cli_root(app: object | None = None) -> tuple[Command, Context]:
    """The click command behind the Typer app (``flows.cli.app`` by default) and its root context."""
    import typer

    if app is None:
        from flows.cli import app
    root = typer.main.get_command(app)
    return root, _context(root, None, "babelbench")


def _anchor(path: tuple[str, ...]) -> str:
    """GitHub's anchor of the heading ``babelbench <path>``."""
    return "babelbench-" + "-".join(path)


def _paragraphs(text: str) -> list[str]:
    """A docstring's paragraphs as Markdown lines (reflowed), each followed by a blank line."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if paragraph.strip():
            out += [" ".join(paragraph.split()), ""]
    return out


# -- writing ---------------------------------------------------------------------------------------------------


def rendered() -> dict[Path, str]:
    """The content every generated file should have now, by path."""
    return {
        README: replace_block(README.read_text(encoding="utf-8"), DAG_BLOCK, dag_block(), where=str(README)),
        CLI_REFERENCE: cli_reference(),
    }


def main() -> int:
    """Rewrite the generated files that are stale; print which."""
    for path, text in rendered().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            print(f"up to date: {path.relative_to(REPO)}")
            continue
        path.write_text(text, encoding="utf-8")
        print(f"rewrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
