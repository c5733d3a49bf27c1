"""The generated parts of the documentation: the README's DAG picture, the layers in ``docs/development.md`` and
``docs/cli.md``.

``make docs`` (``python -m deployments.docs``) rewrites them from the code, and
``tests/face/test_docs_generated.py`` fails when one differs from what this module
would write, so none can drift from the stages, the layers or the command line:

- the DAG is drawn from the stage catalog (:mod:`tasks.catalog`): each
  stage's flow, the stages it reads and the tables it writes;
- the layers are drawn from the import-linter contract in ``pyproject.toml``,
  the one ``lint-imports`` checks;
- the CLI reference walks the Typer app: every command, argument and option,
  with its default and help text.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Typer vendors click; its classes are only named in annotations here
    from typer._click.core import Command, Context, Parameter

from tasks.catalog import FLOWS, stages
from tasks.stage import Stage

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
CLI_REFERENCE = REPO / "docs" / "cli.md"
DAG_BLOCK = "dag"
DEVELOPMENT = REPO / "docs" / "development.md"
LAYERS_BLOCK = "layers"


def _node(name: str, prefix: str = "s_") -> str:
    """A Mermaid node id for a stage (or, with prefix ``f_``, a flow): names hold hyphens, ids may not."""
    return prefix + re.sub(r"\W", "_", name)


def dag_mermaid(stages: Sequence[Stage], flows: Sequence[str] = FLOWS) -> str:
    """The DAG as a Mermaid flowchart: one box per stage with the tables it writes, grouped by the flow that runs
    it (in the order of ``flows``; stages a command runs come last, outside any flow), edges from the stages it
    reads.  A stage that writes nothing is an error: the picture would hide what it does."""
    silent = sorted(stage.name for stage in stages if not stage.writes)
    if silent:
        raise KeyError(f"stages that declare no table they write (tasks/catalog.py): {silent}")
    names = {stage.name for stage in stages}
    lines = ["flowchart TD"]
    for flow in [*flows, ""]:
        members = [stage for stage in stages if stage.flow == flow]
        indent = "    " if flow else "  "
        if flow and members:
            lines.append(f'  subgraph {_node(flow, "f_")}["flow: {flow}"]')
        for stage in members:
            lines.append(f'{indent}{_node(stage.name)}["<b>{stage.name}</b><br/><i>{"<br/>".join(stage.writes)}</i>"]')
        if flow and members:
            lines.append("  end")
    ordered = [stage for flow in [*flows, ""] for stage in stages if stage.flow == flow]
    lines += [f"  {_node(upstream)} --> {_node(stage.name)}"
              for stage in ordered for upstream in sorted(stage.upstream) if upstream in names]
    return "\n".join(lines) + "\n"


def dag_block() -> str:
    """The README's DAG picture: a fenced Mermaid block GitHub renders."""
    return "```mermaid\n" + dag_mermaid(stages()) + "```\n"


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
        " tests/face/test_docs_generated.py fails when it is stale. -->",
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


def layer_contract(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The layers of the first ``layers`` contract of the import-linter configuration, top first."""
    contracts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    return next(contract["layers"] for contract in contracts if contract["type"] == "layers")


def layers_mermaid(layers: Sequence[str]) -> str:
    """The layers as a Mermaid flowchart, top first: each box names its packages (``a | b``: they may not import
    each other; ``a : b``: they may), and each layer may import only the layers below it."""
    lines = ["flowchart TD"]
    for number, layer in enumerate(layers):
        independent = "|" in layer
        members = [member.strip().removeprefix("tasks.") for member in re.split(r"[|:]", layer)]
        joiner = " | " if independent else ", "
        lines.append(f'  l{number}["{joiner.join(members)}"]')
    lines += [f"  l{number} --> l{number + 1}" for number in range(len(layers) - 1)]
    return "\n".join(lines) + "\n"


def rendered() -> dict[Path, str]:
    """The content every generated file should have now, by path."""
    return {
        README: replace_block(README.read_text(encoding="utf-8"), DAG_BLOCK, dag_block(), where=str(README)),
        DEVELOPMENT: replace_block(DEVELOPMENT.read_text(encoding="utf-8"), LAYERS_BLOCK,
                                   "```mermaid\n" + layers_mermaid(layer_contract()) + "```\n", where=str(DEVELOPMENT)),
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
