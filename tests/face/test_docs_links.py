"""Every link and path the README and the guides show leads somewhere inside the repository.

A clone has nothing beside it, so a link or a path that leaves the repository
(``../shared/…``) is dead for every reader. In ``README.md`` and
``docs/**/*.md`` (the generated ``docs/cli.md`` included):

- **Links** — ``[text](target)``, ``![alt](target)``, reference definitions
  ``[id]: target`` and HTML ``href``/``src`` outside code: a relative target
  must be an existing file or folder inside the repository, and its ``#anchor``
  a heading of that Markdown file under GitHub's slug rules. ``http(s)://`` and
  ``mailto:`` links are not followed (the tests run offline); any other scheme
  (``file:``) and absolute paths leave the repository.
- **Paths in inline code** whose first part is a top-level entry of the
  repository (`` `tasks/text/languages.csv` ``) must exist, unless they hold a
  placeholder (``<lang>``, ``*``, ``…``, ``NNN``). They are read from the
  repository root, as commands run.
- **``../`` anywhere else** — prose, inline code, code blocks — is read from the
  repository root too, where it always leaves it.

Absolute paths in text (``/tmp/h``, ``~/.prefect``, ``$BABELBENCH_HOME/…``) name
the reader's machine, not the repository, and are left alone.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from deployments.docs import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_LINKS = (
    re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)"),  # [text](target "title"), ![alt](target)
    re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M),  # [id]: target
    re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']"""),  # <a href="…">, <img src="…">
)
_EXTERNAL = re.compile(r"(?:https?|mailto):", re.I)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_UP = re.compile(r"(?<![\w./~-])\.\./[^\s`'\")\]>,;]*")
_PLACEHOLDER = re.compile(r"[<>*…{}$\[\]]|(?<![A-Za-z])([A-Z])\1{2,}(?![A-Za-z])")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.+?)(?:\s+#+)?\s*$", re.M)
_HTML_ID = re.compile(r"""\b(?:id|name)\s*=\s*["']([^"']+)["']""")


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with each span replaced by spaces (newlines kept), so positions and lines stay put."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = [c if c == "\n" else " " for c in chars[start:end]]
    return "".join(chars)


def _fenced(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of the fenced code blocks of a Markdown text, fences included."""
    spans, start, offset = [], None, 0
    for line in text.split("\n"):
        if _FENCE.match(line):
            if start is None:
                start = offset
            else:
                spans.append((start, offset + len(line)))
                start = None
        offset += len(line) + 1
    if start is not None:
        spans.append((start, len(text)))
    return spans


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: links and HTML reduced to their text, lower case, punctuation dropped,
    each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors a Markdown file offers: its headings' slugs (a repeated one numbered -1, -2, … as GitHub
    does) and HTML ``id``/``name`` attributes."""
    text = path.read_text(encoding="utf-8")
    prose = _blank(text, _fenced(text))
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(prose):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found | set(_HTML_ID.findall(prose))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _check_link(target: str, doc: Path, root: Path) -> str | None:
    """What is wrong with one link target of ``doc`` (None when it leads to something inside ``root``)."""
    target = target.strip("<>")
    if _EXTERNAL.match(target):
        return None
    if _SCHEME.match(target) or target.startswith("/"):
        return "leaves the repository"
    file, _, anchor = target.partition("#")
    resolved = (doc.parent / unquote(file)).resolve() if file else doc
    if not _inside(resolved, root):
        return "leaves the repository"
    if not resolved.exists():
        return "no such file"
    if anchor and resolved.suffix == ".md" and unquote(anchor) not in anchors(resolved):
        return "no heading with that anchor"
    return None


def _check_code_path(token: str, root: Path, top_level: set[str]) -> str | None:
    """What is wrong with a word of inline code that names a path of the repository (None when it exists,
    or when it is not such a path)."""
    path = re.split(r"::|#|:\d", token.strip(".,;:()\"'"))[0]
    first = path.split("/")[0]
    if "/" not in path or first not in top_level or _PLACEHOLDER.search(path):
        return None
    return None if (root / path).exists() else "no such file"


def link_problems(doc: Path, root: Path = REPO) -> tuple[int, list[str]]:
    """How many links and paths ``doc`` shows, and what is wrong with them, each as ``file:line: target (why)``."""
    text = doc.read_text(encoding="utf-8")
    top_level = {entry.name for entry in root.iterdir() if not entry.name.startswith(".")}
    where = str(doc.relative_to(root))
    problems: list[str] = []
    checked = 0

    def report(position: int, shown: str, why: str | None) -> None:
        if why:
            problems.append(f"{where}:{text.count(chr(10), 0, position) + 1}: {shown} ({why})")

    code_blocks = _fenced(text)
    prose = _blank(text, code_blocks)
    spans = list(_CODE_SPAN.finditer(prose))
    for span in spans:
        for word in re.finditer(r"\S+", span.group(1)):
            checked += 1
            report(span.start(1) + word.start(), f"`{word.group()}`", _check_code_path(word.group(), root, top_level))
    plain = _blank(prose, [span.span() for span in spans])
    targets = [match for pattern in _LINKS for match in pattern.finditer(plain)]
    for match in targets:
        checked += 1
        report(match.start(1), match.group(1), _check_link(match.group(1), doc, root))
    # ``../`` outside link targets: prose, inline code and code blocks alike
    rest = _blank(text, [match.span(1) for match in targets])
    for match in _UP.finditer(rest):
        report(match.start(), match.group(), "a path from the repository root that leaves it")
    return checked, problems


# -- the documents ----------------------------------------------------------------------------------------------


def test_every_link_and_path_in_the_docs_stays_inside_the_repository() -> None:
    results = [link_problems(doc) for doc in DOCS]
    # the guides link to each other and name files in hundreds of places: a reader that found few would make
    # this test vacuous
    assert sum(checked for checked, _ in results) > 300, results
    problems = [problem for _, found in results for problem in found]
    assert problems == [], "\n".join(problems)


def test_the_protocol_pages_are_among_the_docs_checked() -> None:
    assert REPO / "docs" / "protocols" / "README.md" in DOCS


# -- the checker itself: it must catch what it is for ----------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository: a guide, another guide with headings, a source file; a file beside the repository."""
    root = tmp_path / "repo"
    (root / "docs" / "sub").mkdir(parents=True)
    (root / "tasks").mkdir()
    (root / "tasks" / "mod.py").write_text("", encoding="utf-8")
    (root / "docs" / "other.md").write_text(
        "# Other guide\n\n## Step one: the `index` (BM25)\n\n## Repeated\n\n## Repeated\n\n"
        "```\n## not a heading\n```\n\n<a id=\"custom-spot\"></a>\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Outside\n", encoding="utf-8")
    return root


def _problems(markdown: str, root: Path, name: str = "docs/guide.md") -> list[str]:
    doc = root / name
    doc.write_text(markdown, encoding="utf-8")
    return link_problems(doc, root)[1]


_LEAVES = "(leaves the repository)"
_UP_FROM_ROOT = "(a path from the repository root that leaves it)"


@pytest.mark.parametrize(("markdown", "line", "expected"), [
    ("The protocol is in [the spec](../shared/specs/clir.md).\n", 3, "../shared/specs/clir.md (no such file)"),
    ("See [outside](../../outside.md), which exists.\n", 3, f"../../outside.md {_LEAVES}"),
    ("See [there](other.md#step-two).\n", 3, "other.md#step-two (no heading with that anchor)"),
    ("See [there](#nowhere).\n", 3, "#nowhere (no heading with that anchor)"),
    ("See [missing](missing.md).\n", 3, "missing.md (no such file)"),
    ("See [absolute](/etc/hosts).\n", 3, f"/etc/hosts {_LEAVES}"),
    ("See [a file URL](file:///etc/hosts).\n", 3, f"file:///etc/hosts {_LEAVES}"),
    ("An image: ![dag](../../outside.md)\n", 3, f"../../outside.md {_LEAVES}"),
    ("[ref]: ../../outside.md\n\nSee [it][ref].\n", 3, f"../../outside.md {_LEAVES}"),
    ('<a href="../../outside.md">out</a>\n', 3, f"../../outside.md {_LEAVES}"),
    ("The facts are in `../shared/specs/`.\n", 3, f"../shared/specs/ {_UP_FROM_ROOT}"),
    ("The facts are in ../shared, beside the clone.\n", 3, f"../shared {_UP_FROM_ROOT}"),
    ("```bash\npython x.py ../shared/data/wikipedia-xml\n```\n", 4, f"../shared/data/wikipedia-xml {_UP_FROM_ROOT}"),
    ("The code is in `tasks/missing.py`.\n", 3, "`tasks/missing.py` (no such file)"),
    ("Run `python tasks/gone.py --fast` first.\n", 3, "`tasks/gone.py` (no such file)"),
    ("A wrapped span `tasks/mod.py\ntasks/gone.py` here.\n", 4, "`tasks/gone.py` (no such file)"),
])
def test_a_link_or_path_that_leads_nowhere_is_reported_with_its_line(markdown: str, line: int, expected: str,
                                                                       repo: Path) -> None:
    assert _problems("# Guide\n\n" + markdown, repo) == [f"docs/guide.md:{line}: {expected}"]


@pytest.mark.parametrize("markdown", [
    "[other](other.md), [a step](other.md#step-one-the-index-bm25), [again](other.md#repeated-1)\n",
    "[custom](other.md#custom-spot), [self](#guide), [folder](../tasks/), [web](https://example.org/../shared)\n",
    "[mail](mailto:someone@example.org) and [up and back](../docs/other.md#other-guide)\n",
    "`tasks/mod.py`, `tasks/mod.py::name`, `tasks/<lang>.csv`, `tasks/templates/answer_*.j2`, `tasks/NNN_x.sql`\n",
    "`lake/shard/` and `flow/name` are not repository paths; `/tmp/h` and `~/.prefect` are the reader's\n",
    "Inline code is not a link: `[x](missing.md)`.\n",
    "```\n## not a heading\n```\n",
])
def test_links_and_paths_that_lead_somewhere_pass(markdown: str, repo: Path) -> None:
    assert _problems("# Guide\n\n" + markdown, repo) == []


def test_links_resolve_from_the_folder_of_the_page(repo: Path) -> None:
    assert _problems("[up](../other.md#repeated) [here](other.md)\n", repo, "docs/sub/page.md") == [
        "docs/sub/page.md:1: other.md (no such file)"]


@pytest.mark.parametrize(("heading", "expected"), [
    ("Step one: the `index` (BM25)", "step-one-the-index-bm25"),
    ("MIRAGE (arena)", "mirage-arena"),
    ("Tracking: MLflow and the `runs` table", "tracking-mlflow-and-the-runs-table"),
    ("Sources, formats and sitelinks", "sources-formats-and-sitelinks"),
    ("See [the guide](x.md) now", "see-the-guide-now"),
    ("Überblick — Größen", "überblick--größen"),  # the dash is dropped, both spaces stay as hyphens
])
def test_slugs_follow_github(heading: str, expected: str) -> None:
    assert slug(heading) == expected


_POINTER = re.compile(r'(docs/[\w/.-]+\.md)``?,\s*"([^"]+)"')


def test_every_pointer_from_the_code_to_a_guide_section_finds_it() -> None:
    """A docstring that sends the reader to ``docs/X.md``, "Heading" names a guide and a heading that exist."""
    pointers = [(path, guide, heading) for root in ("tasks", "flows", "deployments")
                for path in sorted((REPO / root).rglob("*.py"))
                for guide, heading in _POINTER.findall(" ".join(path.read_text(encoding="utf-8").split()))]
    broken = [f"{path.relative_to(REPO)}: {guide}, {heading!r}" for path, guide, heading in pointers
              if not (REPO / guide).is_file() or not re.search(
                  rf"^#+\s+{re.escape(heading)}\s*$", (REPO / guide).read_text(encoding="utf-8"), re.MULTILINE)]
    assert len(pointers) >= 30 and broken == []
