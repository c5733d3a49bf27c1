"""Line blocks: the numbered lines of a decompressed dump, however its pieces fall, split only when read."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.dumps import lines
from tasks.dumps.compression import Block
from tasks.errors import TruncatedInputError


def _pieces_source(pieces: list[bytes], cut: bool):  # noqa: ANN202 - stands in for iter_positioned_blocks
    def blocks(path: Path) -> Iterator[Block]:
        for position, data in enumerate(pieces, start=1):
            yield Block(data, position)
        if cut:
            raise TruncatedInputError(str(path), "decompressed byte 0", "compressed stream ends early")
    return blocks


@pytest.mark.parametrize("seed", range(40))
def test_blocks_number_every_line_of_the_text_once_whatever_the_pieces(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random texts of short lines (blank ones, runs of newlines, a last line with or without its newline) cut into
    random pieces, with blocks of a few bytes: the blocks' lines, read forwards (copied, or as views into the
    pieces) or backwards (a skipped block is read from its end), are the text's lines numbered from 1, the last one marked incomplete when it has no
    newline; a cut archive names the line it stopped in."""
    rng = random.Random(seed)
    text = b"".join(rng.choice([b"a", b"bc", b" ", b"\n", b"\n\n", b"{}"]) for _ in range(rng.randint(1, 120)))
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 12)))) if len(text) > 1 else []
    pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]
    cut = seed % 3 == 0
    monkeypatch.setattr(lines, "iter_positioned_blocks", _pieces_source(pieces, cut))
    monkeypatch.setattr(lines, "LINE_BLOCK_BYTES", rng.randint(1, 20))

    expected = text.split(b"\n")
    complete = text.endswith(b"\n")
    if complete:
        expected.pop()
    got: list[lines.Line] = []
    backwards: list[tuple[int, bytes]] = []
    stopped = None
    try:
        for block in lines.iter_line_blocks(Path("dump.json.gz")):
            if seed % 2:
                views = [(line.number, bytes(line.data), line.complete) for line in block.line_views()]
                assert block.count == len(views) and "data" not in vars(block)  # counted as the views were found
            else:
                counted = block.count  # before the block is split: its newlines counted
            backwards += list(block.lines_backwards())[::-1]
            assert (views if seed % 2 else counted) == (list(block.lines()) if seed % 2 else len(block.data))
            got += block.lines()
    except TruncatedInputError as exc:
        stopped = exc.position
    assert [(line.number, line.data) for line in got] == list(enumerate(expected, start=1))
    assert backwards == list(enumerate(expected, start=1))
    assert [line.complete for line in got] == [True] * (len(expected) - 1) + [complete]
    if cut:
        assert stopped is not None and stopped.startswith(f"line {len(expected) + complete}; ")


def test_a_block_read_only_from_its_end_is_never_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a part of a CirrusSearch file does with the blocks before its range: count them and look at their
    last lines, which must not split the whole block (the split was a third of the skip)."""
    text = b"".join(b'{"index": {"_id": "%d"}}\n{"title": "t%d"}\n' % (i, i) for i in range(1000))
    monkeypatch.setattr(lines, "iter_positioned_blocks", _pieces_source([text[:20_000], text[20_000:30_000], text[30_000:]], False))
    monkeypatch.setattr(lines, "LINE_BLOCK_BYTES", 25_000)
    block = next(lines.iter_line_blocks(Path("dump.json.gz")))
    end = text.rfind(b"\n", 0, 30_000)  # the block ends at the last newline of the piece that took it past 25,000
    assert block.count == text[:end].count(b"\n") + 1
    assert next(block.lines_backwards()) == (block.count, text[:end].rsplit(b"\n", 1)[1])
    assert "data" not in vars(block)
