"""Cut the excerpts in this folder from the shared real XML samples (how they were made; not run by the tests).

``python tests/data/wikipedia-xml/excerpt.py ../shared/data/wikipedia-xml`` writes
``<lang>wiki-excerpt.xml.xz`` for bn, el, ja and uk.  An excerpt is real dump text,
line for line, so that the tests keep comparing the parser with facts of real
data while a clone without ``../shared`` carries only a few hundred KB:

- the ``<mediawiki>`` header and ``<siteinfo>`` (localised namespace names);
- of the complete ``<page>`` blocks, in file order: every ``STEP``-th article of
  the main namespace (counting its non-redirect pages from the first), every
  disambiguation page (a ``{{marker}}``/``{{marker|`` template of the language's
  ``disambiguation_markers`` in ``tasks/text/languages.csv``, or ``__DISAMBIG__``),
  every main-namespace redirect (small), and the first page of each other
  namespace (which the parser must leave out);
- the source's last, cut-off page from its ``<page>`` line to the end of the file,
  so each excerpt still ends inside a page's text: a truncated download.

The facts the tests assert about the excerpts were counted from the written
files by hand (see the comments beside them), not by this script.
"""

from __future__ import annotations

import csv
import lzma
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LANGUAGES_CSV = HERE.parents[2] / "tasks" / "text" / "languages.csv"
SOURCES = {lang: f"{lang}wiki-truncated-100k.xml.xz" for lang in ("bn", "el", "ja", "uk")}
STEP = 30  # ~420 KB for the four excerpts, xz -9e: articles are most of it


def markers(lang: str) -> list[str]:
    """The language's disambiguation template names, from the packaged language table."""
    with LANGUAGES_CSV.open(encoding="utf-8") as table:
        rows = csv.DictReader(line for line in table if not line.startswith("#"))
        return next(row for row in rows if row["lang"] == lang)["disambiguation_markers"].split("|")


def excerpt(text: str, lang: str, step: int = STEP) -> str:
    """The excerpt of one decompressed sample (see the module docstring for what is kept)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    starts = [i for i, line in enumerate(lines) if line == "  <page>"]
    ends = [i for i, line in enumerate(lines) if line == "  </page>"]
    if len(starts) != len(ends) + 1:
        raise ValueError(f"{lang}: expected one cut-off page after {len(ends)} complete ones,"
                         f" found {len(starts)} <page> lines")
    disambiguation = re.compile(r"\{\{\s*(?:" + "|".join(map(re.escape, markers(lang))) + r")\s*(?:\}\}|\|)"
                                r"|__DISAMBIG__", re.IGNORECASE)
    kept = lines[:starts[0]]
    articles = 0
    namespaces: set[str] = set()
    for start, end in zip(starts, ends):
        block = "\n".join(lines[start:end + 1])
        namespace = re.search(r"<ns>(-?\d+)</ns>", block)
        if namespace is None:
            raise ValueError(f"{lang}: the page at line {start + 1} has no <ns>")
        if namespace.group(1) != "0":
            keep = namespace.group(1) not in namespaces
            namespaces.add(namespace.group(1))
        elif "<redirect " in block:
            keep = True
        else:
            keep = articles % step == 0 or bool(disambiguation.search(block))
            articles += 1
        if keep:
            kept += lines[start:end + 1]
    kept += lines[starts[-1]:]
    return "\n".join(kept) + "\n"


def main(source_dir: Path) -> None:
    for lang, name in SOURCES.items():
        text = lzma.decompress((source_dir / name).read_bytes()).decode("utf-8")
        out = HERE / f"{lang}wiki-excerpt.xml.xz"
        out.write_bytes(lzma.compress(excerpt(text, lang).encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
        print(f"{out.name}: {out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
