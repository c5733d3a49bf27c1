"""Numbered lines of line-oriented dumps (CirrusSearch, SQL, Wikidata JSON) and issue reporting.

Every line-oriented parser reads through :func:`iter_line_blocks` (or
:func:`iter_lines`, its lines one by one), so a cut archive is reported the
same way everywhere: the line it stopped in and the decompressed byte offset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from tqdm import tqdm

from tasks.dumps.compression import iter_positioned_blocks
from tasks.errors import TruncatedInputError

logger = logging.getLogger(__name__)

IssueSink = Callable[[dict[str, Any]], None]


LINE_BLOCK_BYTES = 8 << 20  # decompressed bytes gathered before a block of whole lines is cut
_NEWLINE = ord("\n")


def _newlines(piece: bytes) -> np.ndarray:
    """Where ``piece`` holds a newline, as a mask (numpy compares without the GIL, 4x ``bytes.count``)."""
    return np.frombuffer(piece, np.uint8) == _NEWLINE


class Line(NamedTuple):
    """One line of a dump, without its newline; ``complete`` is False for a last line with no newline."""

    number: int
    data: bytes
    complete: bool


class LineView(NamedTuple):
    """A :class:`Line` whose data may be a view into the decompressed block rather than a copy."""

    number: int
    data: bytes | memoryview
    complete: bool


@dataclass
class LineBlock:
    """Consecutive lines of a dump, numbered from ``first``, without their newlines; the last one is the file's
    incomplete last line when ``complete`` is False. ``position`` is the compressed bytes read when the block was
    cut (see :class:`tasks.dumps.compression.Block`).

    The block keeps the decompressed pieces it was cut from (``pieces``: its bytes, without the last newline)
    and splits them into lines only when they are asked for: a part of a CirrusSearch file skips most of the
    file's blocks, and needs only their last lines (:meth:`lines_backwards`).
    """

    first: int
    pieces: list[bytes]
    position: int
    complete: bool = True

    @cached_property
    def count(self) -> int:
        """Lines in the block: those split already, or its newlines counted (:func:`_newlines`: the reader thread
        decompressing the next blocks needs the GIL between its calls)."""
        if "data" in self.__dict__:
            return len(self.data)
        return 1 + sum(int(np.count_nonzero(_newlines(piece))) for piece in self.pieces)

    @cached_property
    def data(self) -> list[bytes]:
        """The block's lines, each piece split once and its first line joined to the end of the piece before's."""
        lines: list[bytes] = []
        open_line: list[bytes] = []
        for piece in self.pieces:
            parts = piece.split(b"\n")
            open_line.append(parts[0])
            if len(parts) > 1:
                lines.append(b"".join(open_line))
                lines += parts[1:-1]
                open_line = [parts[-1]]
        lines.append(b"".join(open_line))
        return lines

    def lines(self) -> Iterator[Line]:
        last = len(self.data) - 1
        return (Line(self.first + offset, data, self.complete or offset < last) for offset, data in enumerate(self.data))

    def line_views(self) -> Iterator[LineView]:
        """:meth:`lines` as views into the pieces, for a parser that only reads them (a JSON decoder takes any
        buffer): splitting a block copies it line by line, a sixth of a CirrusSearch parse. Line ends are found by
        ``bytes.find`` (memchr), half the cost of a numpy mask over the piece when the lines are long. A line that
        runs across two pieces is joined (bytes)."""
        number = self.first
        open_line: list[bytes | memoryview] = []  # the line running on from the pieces before
        for piece in self.pieces:
            view, start, find = memoryview(piece), 0, piece.find
            while (cut := find(b"\n", start)) >= 0:
                if open_line:
                    line: bytes | memoryview = b"".join([*open_line, view[:cut]])
                    open_line = []
                else:
                    line = view[start:cut]
                yield LineView(number, line, True)
                number, start = number + 1, cut + 1
            open_line.append(view[start:])
        last = open_line[0] if len(open_line) == 1 else b"".join(open_line)
        yield LineView(number, last, self.complete)
        self.__dict__.setdefault("count", number - self.first + 1)

    def lines_backwards(self) -> Iterator[tuple[int, bytes]]:
        """(number, line) from the block's last line back to its first, found without splitting the whole block."""
        number = self.first + self.count - 1
        tail: list[bytes] = []  # the pieces of the line being gathered, last first
        for piece in reversed(self.pieces):
            end = len(piece)
            while (cut := piece.rfind(b"\n", 0, end)) >= 0:
                tail.append(piece[cut + 1:end])
                yield number, b"".join(reversed(tail))
                number, tail, end = number - 1, [], cut
            tail.append(piece[:end])
        yield number, b"".join(reversed(tail))


def iter_line_blocks(path: Path) -> Iterator[LineBlock]:
    """The dump's lines in blocks of about ``LINE_BLOCK_BYTES`` of decompressed text.

    A block ends at the last newline of the decompressed piece that brings it
    past ``LINE_BLOCK_BYTES``, so block boundaries and positions depend only on
    the file and every process reading it cuts the same blocks. A cut archive
    raises ``TruncatedInputError`` after the last block, naming the line it
    stopped in and the decompressed byte offset.
    """
    number, size, position = 1, 0, 0
    pieces: list[bytes] = []  # read since the last block, the start of the line still open last
    with tqdm(desc=path.name, unit="B", unit_scale=True, disable=None) as bar:
        try:
            for piece in iter_positioned_blocks(path):
                bar.update(len(piece.data))
                position, data = piece.position, piece.data
                size += len(data)
                if size < LINE_BLOCK_BYTES or (cut := data.rfind(b"\n")) < 0:
                    pieces.append(data)
                    continue
                block = LineBlock(number, [*pieces, data[:cut]], position)
                yield block
                number += block.count
                pieces = [data[cut + 1:]]
                size = len(pieces[0])
        except TruncatedInputError as exc:
            cut_at: TruncatedInputError | None = exc
        else:
            cut_at = None
    while pieces and not pieces[-1]:
        pieces.pop()
    if pieces:
        complete = pieces[-1].endswith(b"\n")
        if complete:
            pieces[-1] = pieces[-1][:-1]
        block = LineBlock(number, pieces, position, complete=complete)
        yield block
        number += block.count - (not complete)
    if cut_at is not None:
        raise TruncatedInputError(cut_at.source, f"line {number}; {cut_at.position}", cut_at.reason) from cut_at


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
