"""Numbered lines of line-oriented dumps (CirrusSearch, SQL, Wikidata JSON) and issue reporting.

Every line-oriented parser reads through :func:`iter_lines`, so a cut archive
is reported the same way everywhere: the line it stopped in and the
decompressed byte offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tqdm import tqdm

from tasks.dumps.compression import iter_decompressed_blocks
from tasks.errors import TruncatedInputError

logger = logging.getLogger(__name__)

IssueSink = Callable[[dict[str, Any]], None]


class Line(NamedTuple):
    """One line of a dump, without its newline; ``complete`` is False for a last line with no newline."""

    number: int
    data: bytes
    complete: bool


def iter_lines(path: Path) -> Iterator[Line]:
    """Numbered lines of a dump file, whatever its compression.

    A last line without a newline is still yielded (marked incomplete), because
    only the format can say whether it is whole: an SQL dump's cut line still
    holds complete rows. A cut archive then raises ``TruncatedInputError``
    naming the line it stopped in and the decompressed byte offset.
    """
    number = 0
    pending: list[bytes] = []
    with tqdm(desc=path.name, unit="B", unit_scale=True, disable=None) as bar:
        try:
            for block in iter_decompressed_blocks(path):
                bar.update(len(block))
                pieces = block.split(b"\n")
                if len(pieces) == 1:
                    pending.append(block)
                    continue
                pending.append(pieces[0])
                number += 1
                yield Line(number, b"".join(pending), True)
                for piece in pieces[1:-1]:
                    number += 1
                    yield Line(number, piece, True)
                pending = [pieces[-1]]
        except TruncatedInputError as exc:
            cut: TruncatedInputError | None = exc
        else:
            cut = None
    tail = b"".join(pending)
    if tail:
        yield Line(number + 1, tail, False)
    if cut is not None:
        raise TruncatedInputError(cut.source, f"line {number + 1}; {cut.position}", cut.reason) from cut


def issue_reporter(source: str, on_issue: IssueSink | None) -> Callable[[str, str | None, str], None]:
    """A function that files one issue row; without a sink the issue is logged so it is never lost."""

    def report(position: str, item: str | None, reason: str) -> None:
        issue = {"source": source, "position": position, "item": item, "reason": reason}
        if on_issue is None:
            logger.warning("skipped input in %(source)s at %(position)s (%(item)s): %(reason)s", issue)
        else:
            on_issue(issue)

    return report
