"""Numbered lines of line-oriented dumps (CirrusSearch, SQL, Wikidata JSON) and issue reporting.

Every line-oriented parser reads through :func:`iter_line_blocks` (or
:func:`iter_lines`, its lines one by one), so a cut archive is reported the
same way everywhere: the line it stopped in and the decompressed byte offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tqdm import tqdm

from tasks.dumps.compression import iter_positioned_blocks
from tasks.errors import TruncatedInputError

logger = logging.getLogger(__name__)

IssueSink = Callable[[dict[str, Any]], None]


LINE_BLOCK_BYTES = 8 << 20  # decompressed bytes gathered before a block of whole lines is cut


class Line(NamedTuple):
    """One line of a dump, without its newline; ``complete`` is False for a last line with no newline."""

    number: int
    data: bytes
    complete: bool


class LineBlock(NamedTuple):
    """Consecutive lines of a dump, numbered from ``first``, without their newlines; the last one is the file's
    incomplete last line when ``complete`` is False. ``position`` is the compressed bytes read when the block was
    cut (see :class:`tasks.dumps.compression.Block`)."""

    first: int
    data: list[bytes]
    position: int
    complete: bool = True

    def lines(self) -> Iterator[Line]:
        last = len(self.data) - 1
        return (Line(self.first + offset, data, self.complete or offset < last) for offset, data in enumerate(self.data))


def iter_line_blocks(path: Path) -> Iterator[LineBlock]:
    """The dump's lines in blocks of about ``LINE_BLOCK_BYTES`` of decompressed text.

    Each decompressed piece is split once, its first line joined to the end
    of the previous piece's last; a block ends with the piece that brings it
    past ``LINE_BLOCK_BYTES``, so block boundaries and positions depend only on
    the file and every process reading it cuts the same blocks. A cut archive
    raises ``TruncatedInputError`` after the last block, naming the line it
    stopped in and the decompressed byte offset.
    """
    number, size, position = 1, 0, 0
    lines: list[bytes] = []
    partial: list[bytes] = []  # the pieces of the line still open at the end of the last piece
    with tqdm(desc=path.name, unit="B", unit_scale=True, disable=None) as bar:
        try:
            for piece in iter_positioned_blocks(path):
                bar.update(len(piece.data))
                position = piece.position
                parts = piece.data.split(b"\n")
                partial.append(parts[0])
                if len(parts) == 1:
                    continue
                lines.append(b"".join(partial))
                lines += parts[1:-1]
                partial = [parts[-1]]
                size += len(piece.data)
                if size >= LINE_BLOCK_BYTES:
                    yield LineBlock(number, lines, position)
                    number, size, lines = number + len(lines), 0, []
        except TruncatedInputError as exc:
            cut: TruncatedInputError | None = exc
        else:
            cut = None
    tail = b"".join(partial)
    if lines or tail:
        yield LineBlock(number, [*lines, tail] if tail else lines, position, complete=not tail)
        number += len(lines)
    if cut is not None:
        raise TruncatedInputError(cut.source, f"line {number}; {cut.position}", cut.reason) from cut


def iter_lines(path: Path) -> Iterator[Line]:
    """Numbered lines of a dump file, whatever its compression.

    A last line without a newline is still yielded (marked incomplete), because
    only the format can say whether it is whole: an SQL dump's cut line still
    holds complete rows. A cut archive then raises ``TruncatedInputError``
    naming the line it stopped in and the decompressed byte offset.
    """
    for block in iter_line_blocks(path):
        yield from block.lines()


def issue_reporter(source: str, on_issue: IssueSink | None) -> Callable[[str, str | None, str], None]:
    """A function that files one issue row; without a sink the issue is logged so it is never lost."""

    def report(position: str, item: str | None, reason: str) -> None:
        issue = {"source": source, "position": position, "item": item, "reason": reason}
        if on_issue is None:
            logger.warning("skipped input in %(source)s at %(position)s (%(item)s): %(reason)s", issue)
        else:
            on_issue(issue)

    return report
