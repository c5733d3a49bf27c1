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
    """Consecutive lines of a dump: ``data`` holds them with their newlines (``newlines`` of them), the last one
    without when it is the file's incomplete last line; ``first`` is the first one's number and ``position`` the
    compressed bytes read when the block was cut (see :class:`tasks.dumps.compression.Block`)."""

    first: int
    data: bytes
    position: int
    newlines: int

    def lines(self) -> Iterator[Line]:
        pieces = self.data.split(b"\n")
        for offset, piece in enumerate(pieces[:-1]):
            yield Line(self.first + offset, piece, True)
        if pieces[-1]:
            yield Line(self.first + len(pieces) - 1, pieces[-1], False)

    def lines_backward(self) -> Iterator[Line]:
        """The block's lines from the last to the first, each cut out when reached (the rest is not split)."""
        data, number, complete = self.data, self.first + self.newlines, False
        stop = len(data)
        if data.endswith(b"\n"):
            stop, number, complete = stop - 1, number - 1, True
        while number >= self.first:
            start = data.rfind(b"\n", 0, stop) + 1
            yield Line(number, data[start:stop], complete)
            stop, number, complete = start - 1, number - 1, True


def iter_line_blocks(path: Path) -> Iterator[LineBlock]:
    """The dump's lines in blocks of about ``LINE_BLOCK_BYTES``, cut at line ends.

    A block is cut at the last line end of the decompressed piece that brings
    it past ``LINE_BLOCK_BYTES`` and is copied once, when it is joined; block
    boundaries and positions depend only on the file, so every process reading
    it cuts the same blocks. A cut archive raises ``TruncatedInputError``
    after the last block, naming the line it stopped in and the decompressed
    byte offset.
    """
    number, size, position = 1, 0, 0
    pending: list[bytes | memoryview] = []

    def block(data: bytes) -> LineBlock:
        nonlocal number
        lines = LineBlock(number, data, position, data.count(b"\n"))
        number += lines.newlines
        return lines

    with tqdm(desc=path.name, unit="B", unit_scale=True, disable=None) as bar:
        try:
            for piece in iter_positioned_blocks(path):
                bar.update(len(piece.data))
                pending.append(piece.data)
                size += len(piece.data)
                position = piece.position
                if size < LINE_BLOCK_BYTES or (end := piece.data.rfind(b"\n") + 1) == 0:
                    continue
                pending[-1] = memoryview(piece.data)[:end]
                yield block(b"".join(pending))
                pending, size = [piece.data[end:]], len(piece.data) - end
        except TruncatedInputError as exc:
            cut: TruncatedInputError | None = exc
        else:
            cut = None
    if size:
        yield block(b"".join(pending))
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
