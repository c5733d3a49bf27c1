"""Every ``babelbench …`` command the README, the guides and the code's own messages show is one the CLI accepts.

The commands are read from fenced code blocks (a command at the start of a
line, after a ``$`` prompt, environment assignments, a path such as
``.venv/bin/``, or ``&&``/``;``/``|``) and from inline code that starts with
one. Each is walked through the Typer app: every (sub)command must exist, every
option must be an option of that command, and the stages named to ``--force``
or ``--stage`` must be real — for ``--force``, one the command's help lists.
Synopsis notation is understood: ``[--opt X]`` is optional, ``a|b`` lists
alternatives (each is checked), and UPPER-CASE words or ``…`` are placeholders.
``docs/cli.md`` is left out: it is generated from the CLI (and checked for
staleness by tests/face/test_docs_generated.py).  The messages are the string
literals of tasks/, flows/ and deployments/ (an f-string's fields read as
placeholders) with a command in inline code: what an error or a summary tells
an operator to run must run.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from deployments.docs import CLI_REFERENCE, REPO, cli_root
from tasks.catalog import stages

_cli = cache(cli_root)  # the app's command tree, built once
DOCS = [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if p != CLI_REFERENCE)]
_AT_COMMAND_POSITION = re.compile(
    r"(?:^\s*(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*|(?:&&|;|\|)\s*)(?:[\w.~-]*/)*babelbench(?=\s|$)(?P<rest>.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_STAGES_IN_HELP = re.compile(r"Stages: ([a-z, -]+)\.")


@dataclass(frozen=True)
class Shown:
    """A command as a document shows it: where, and the words after ``babelbench``."""

    where: str
    text: str


def shown_commands(path: Path, root: Path = REPO) -> list[Shown]:
    """The ``babelbench`` commands in a Markdown file's code blocks and inline code, with file:line (from ``root``)."""
    found: list[Shown] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    in_fence = False
    pending = ""
    prose: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            prose.append((number, line))
            continue
        pending += line
        if pending.endswith("\\"):  # a continued shell line
            pending = pending[:-1] + " "
            continue
        match = _AT_COMMAND_POSITION.search(pending)
        if match:
            found.append(Shown(f"{path.relative_to(root)}:{number}", match.group("rest")))
        pending = ""
    # inline code may wrap across lines of a paragraph: join the prose, remembering where each line starts
    text = "\n".join(line for _, line in prose)
    starts = [0]
    for _, line in prose:
        starts.append(starts[-1] + len(line) + 1)
    for span in _INLINE.finditer(text):
        code = " ".join(span.group(1).split())
        match = _AT_COMMAND_POSITION.search(code)
        if match:
            index = next(i for i, start in enumerate(starts) if start > span.start()) - 1
            found.append(Shown(f"{path.relative_to(root)}:{prose[index][0]}", match.group("rest")))
    return found


def _literal(node: ast.Constant | ast.JoinedStr) -> str:
    """A string literal's text, each f-string field as the placeholder ``…``."""
    if isinstance(node, ast.Constant):
        return node.value
    return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)


def suggested_commands(path: Path, root: Path = REPO) -> list[Shown]:
    """The ``babelbench`` commands in inline code (backticks) in a Python file's string literals, with file:line."""
    found: list[Shown] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            for span in _INLINE.finditer(_literal(node)):
                match = _AT_COMMAND_POSITION.search(" ".join(span.group(1).split()))
                if match:
                    found.append(Shown(f"{path.relative_to(root)}:{node.lineno}", match.group("rest")))
    return found


def _words(text: str) -> list[str]:
    """Shell words without comments; unbalanced quotes in prose fall back to whitespace."""
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split("#")[0].split()


def _placeholder(word: str) -> bool:
    return "…" in word or word in ("...", "") or (word.upper() == word and any(c.isalpha() for c in word))


def _bare(word: str) -> str:
    """A word without synopsis brackets and a trailing comma."""
    return word.strip("[]").rstrip(",").strip("[]")


def check(shown: Shown) -> list[str]:
    """What is wrong with one shown command (nothing when the CLI accepts it)."""
    root, ctx = _cli()
    words = _words(shown.text)
    return _check_words(root, ctx, words, ("babelbench",), shown.where) + _own_judge(words, shown.where)


def _own_judge(words: list[str], where: str) -> list[str]:
    """An ``eval`` whose judge is also one of its models is refused unless it says ``--judge-own-system``: a guide
    must not show a command that stops with that error."""
    if "eval" not in words or "--judge-own-system" in words:
        return []
    named = {name: set(words[words.index(name) + 1].split(",")) if name in words[:-1] else set()
             for name in ("--models", "--judges")}
    both = sorted(named["--models"] & named["--judges"])
    return [f"{where}: `babelbench eval` names {', '.join(both)} as model and judge without --judge-own-system"] \
        if both and not any(map(_placeholder, both)) else []


def _options(command: object, ctx: object) -> dict[str, object]:
    params = command.get_params(ctx)  # type: ignore[attr-defined]
    return {name: param for param in params if param.param_type_name == "option"
            for name in (*param.opts, *param.secondary_opts)}


def _check_words(command: object, ctx: object, words: list[str], path: tuple[str, ...], where: str) -> list[str]:
    options = _options(command, ctx)
    group = hasattr(command, "list_commands")
    errors: list[str] = []
    index = 0
    while index < len(words):
        word = _bare(words[index])
        index += 1
        if word.startswith("-") and len(word) > 1 and not _placeholder(word.lstrip("-")):
            name = word.split("=", 1)[0]
            param = options.get(name)
            if param is None:
                errors.append(f"{where}: `{' '.join(path)}` has no option {name}")
                continue
            if getattr(param, "is_flag", False) or "=" in word:
                continue
            value = _bare(words[index]) if index < len(words) else ""
            index += 1
            if name in ("--force", "--stage"):
                errors += _check_stages(param, name, value, path, where)
            continue
        if not group:
            continue  # an argument or an option's value
        if _placeholder(word):
            return errors  # `babelbench COMMAND …`: nothing more to check
        for alternative in word.split("|"):
            sub = command.get_command(ctx, alternative)  # type: ignore[attr-defined]
            if sub is None or sub.hidden:
                errors.append(f"{where}: `{' '.join(path)}` has no command {alternative!r}")
                continue
            sub_ctx = sub.context_class(sub, parent=ctx, info_name=alternative)
            errors += _check_words(sub, sub_ctx, words[index:], (*path, alternative), where)
        return errors
    return errors


def _check_stages(param: object, name: str, value: str, path: tuple[str, ...], where: str) -> list[str]:
    listed = _STAGES_IN_HELP.search(" ".join((getattr(param, "help", None) or "").split()))
    allowed = [s.strip() for s in listed.group(1).split(",")] if listed else sorted(stage.name for stage in stages())
    return [f"{where}: `{' '.join(path)} {name} {stage}`: not a stage of this command (stages: {', '.join(allowed)})"
            for stage in re.split(r"[|,]", value) if stage and not _placeholder(stage) and stage not in allowed]


# -- the documents ----------------------------------------------------------------------------------------------


def test_every_command_shown_in_the_docs_is_accepted_by_the_cli() -> None:
    shown = [command for path in DOCS for command in shown_commands(path)]
    # the README alone shows more than thirty: an extractor that found few would make this test vacuous
    assert len(shown) > 100, len(shown)
    errors = [error for command in shown for error in check(command)]
    assert errors == [], "\n".join(errors)


def test_every_command_the_code_tells_an_operator_to_run_is_accepted_by_the_cli() -> None:
    sources = sorted(path for folder in ("tasks", "flows", "deployments") for path in (REPO / folder).rglob("*.py"))
    shown = [command for path in sources for command in suggested_commands(path)]
    assert len(shown) > 30, len(shown)  # errors and summaries name dozens: finding few means the reader is broken
    errors = [error for command in shown for error in check(command)]
    assert errors == [], "\n".join(errors)


def test_a_wrong_command_in_a_message_is_reported_with_its_line(tmp_path: Path) -> None:
    source = tmp_path / "stage.py"
    source.write_text('x = 1\nmessage = (f"nothing to translate into {lang}: run"\n'
                      '           f" `babelbench qa translate --benchmark {name} --to {lang}` first")\n'
                      'ok = "see `babelbench translate --benchmark B --to de`"\n', encoding="utf-8")
    errors = [error for command in suggested_commands(source, tmp_path) for error in check(command)]
    assert errors == ["stage.py:2: `babelbench qa` has no command 'translate'"], errors


def test_the_readme_shows_both_quick_start_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^make demo\b", readme, re.M) and re.search(r"^make test\b", readme, re.M)


# -- the checker itself: it must catch what it is for ----------------------------------------------------------


def _errors(markdown: str, tmp_path: Path) -> list[str]:
    doc = tmp_path / "guide.md"
    doc.write_text(markdown, encoding="utf-8")
    return [error for command in shown_commands(doc, tmp_path) for error in check(command)]


@pytest.mark.parametrize(("markdown", "expected"), [
    ("```bash\nbabelbench clir biuld --name x --langs en,de\n```\n", "has no command 'biuld'"),
    ("```bash\nbabelbench clir build --name x --lang en,de\n```\n", "`babelbench clir build` has no option --lang"),
    ("```bash\nbabelbench clir build --name x \\\n    --langs en,de --top-n 5\n```\n", "has no option --top-n"),
    ("Run `babelbench eval --benchmark b --models m --force scorng` again.\n", "--force scorng`: not a stage"),
    ("```\nbabelbench corpus ingest --lang en --force index\n```\n", "`babelbench corpus ingest --force index`"),
    ("```\nbabelbench rerun --stage judgment --scope xrag\n```\n", "--stage judgment`: not a stage"),
    ("```\nbabelbench import mkqa|eclektic|nope --source FILE\n```\n", "has no command 'nope'"),
    ("```\n$ .venv/bin/babelbench --home /tmp/h sql \"SELECT 1\" --jsn\n```\n", "`babelbench sql` has no option --jsn"),
    ("The rerun, `babelbench rerun\n--stage judgin`, recomputes.\n", "--stage judgin`"),
    ("```\nbabelbench eval --benchmark x --models qwen,local --judges qwen\n```\n", "names qwen as model and judge"),
])
def test_a_wrong_command_is_reported_with_its_line(markdown: str, expected: str, tmp_path: Path) -> None:
    errors = _errors(markdown, tmp_path)
    assert len(errors) == 1 and expected in errors[0], errors
    assert re.match(r"guide\.md:\d+: ", errors[0])


@pytest.mark.parametrize("markdown", [
    "```bash\nbabelbench [--home DIR] clir build --name N --langs a,b,c [--multi] [--force STAGE]\n```\n",
    "```bash\nbabelbench eval --benchmark B --models m1,m2 [--force inference|judging|scoring]  # see --nope\n```\n",
    "```\nPREFECT_API_URL=http://x/api .venv/bin/babelbench models list\n```\n",
    "```\nbabelbench eval --benchmark x --models local --judges local --judge-own-system\n```\n",
    "```\nprefect worker start --pool babelbench   checkout + .venv\n```\n",  # not a babelbench command
    "Artifacts `babelbench-<flow>-summary` and `babelbench …` runs.\n",
])
def test_synopsis_notation_and_non_commands_pass(markdown: str, tmp_path: Path) -> None:
    assert _errors(markdown, tmp_path) == []


def test_the_line_of_a_command_is_where_it_is_shown(tmp_path: Path) -> None:
    markdown = "# T\n\ntext\n\n```bash\nbabelbench sql \"SELECT 1\" --bad\n```\n\nand `babelbench demo --bad` here\n"
    assert [e.split(": ")[0].split(":")[-1] for e in _errors(markdown, tmp_path)] == ["6", "9"]

