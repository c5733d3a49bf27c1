"""CirrusSearch content dump parsing, on small hand-written dumps in the real bulk format."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from tasks.dumps.cirrus import WHOLE, Part, iter_cirrus_documents
from tasks.dumps.records import DOCUMENT_COLUMNS
from tasks.errors import InputFormatError, TruncatedInputError


def _action(page_id: str, *, with_type: bool = True) -> str:
    meta = {"_type": "page", "_id": page_id} if with_type else {"_id": page_id}
    return json.dumps({"index": meta})


def _doc(title: str, namespace: int = 0, **fields: object) -> str:
    body = {"title": title, "text": f"{title} text.", "namespace": namespace, "timestamp": "2024-05-01T10:00:00Z"}
    body.update(fields)
    return json.dumps(body, ensure_ascii=False)


def _write_gz(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    return path


def _row(page_id: int | None, title: str, **overrides: object) -> dict[str, object]:
    row = {
        "lang": "en", "page_id": page_id, "title": title, "text": f"{title} text.", "qid": None, "namespace": 0,
        "is_redirect": False, "redirect_target": None, "is_disambiguation": False,
        "timestamp": "2024-05-01T10:00:00Z", "source": "enwiki-20240501-cirrussearch-content.json.gz",
        "revision_id": None,
    }
    row.update(overrides)
    return row


SAMPLE = [
    _action("12"),
    _doc("Anarchism", wikibase_item="Q6199", version=1186000001, category=["Political philosophy"], template=["Template:Infobox"],
         redirect=[{"namespace": 0, "title": "Anarchist"}, {"namespace": 1, "title": "Talk:Anarchy"}],
         popularity_score=0.001, incoming_links=5000, opening_text="Anarchism is", heading=["History"],
         language="en", create_timestamp="2001-10-11T12:00:00Z"),
    _action("25", with_type=False),
    _doc("Mercury", category=["All disambiguation pages", "Disambiguation pages"], template=[], redirect=[]),
    _action("40"),
    _doc("Portal:Science", namespace=100, wikibase_item="Q5"),
    _action("41"),
    _doc("Jaguar (disambiguation)", wikibase_item="Q100", category=[], template=["Template:Dab", "Template:Short description"]),
]


def test_documents_qids_redirects_namespaces_and_disambiguation(tmp_path: Path) -> None:
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", SAMPLE)
    issues: list[dict] = []

    rows = list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert rows == [
        _row(12, "Anarchism", qid="Q6199", revision_id=1186000001),  # the line's version: its revision id
        _row(None, "Anarchist", text="", is_redirect=True, redirect_target="Anarchism", timestamp=None),
        _row(25, "Mercury", is_disambiguation=True),
        _row(41, "Jaguar (disambiguation)", qid="Q100", is_disambiguation=True),
    ]
    assert all(tuple(row) == DOCUMENT_COLUMNS for row in rows)
    assert issues == []


def test_localised_template_prefix_matches_the_languages_markers(tmp_path: Path) -> None:
    lines = [_action("7"), _doc("Bank", template=["Vorlage:Begriffsklärung"], category=[])]
    path = _write_gz(tmp_path / "dewiki-20240501-cirrussearch-content.json.gz", lines)

    (german,) = iter_cirrus_documents(path, "de")
    (english,) = iter_cirrus_documents(path, "en")

    assert german["is_disambiguation"] is True and german["lang"] == "de"
    assert english["is_disambiguation"] is False  # the German marker is not an English one


def test_malformed_line_is_reported_and_later_documents_survive(tmp_path: Path) -> None:
    lines = [SAMPLE[0], SAMPLE[1], _action("25"), '{"title": "Mercury", "text": "broken', SAMPLE[6], SAMPLE[7]]
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", lines)
    issues: list[dict] = []

    titles = [row["title"] for row in iter_cirrus_documents(path, "en", on_issue=issues.append)]

    assert titles == ["Anarchism", "Anarchist", "Jaguar (disambiguation)"]
    assert len(issues) == 1
    assert issues[0]["source"] == str(path)
    assert issues[0]["position"] == "line 4"
    assert issues[0]["item"] == "25"
    assert "malformed JSON" in issues[0]["reason"]


def test_action_line_without_its_document_is_reported(tmp_path: Path) -> None:
    lines = [_action("3"), _action("4"), _doc("Zebra")]
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", lines)
    issues: list[dict] = []

    rows = list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert [(row["page_id"], row["title"]) for row in rows] == [(4, "Zebra")]
    assert [(i["position"], i["item"], i["reason"]) for i in issues] == [("line 1", "3", "action line without its document")]


def test_truncated_gzip_yields_complete_documents_then_names_the_file(tmp_path: Path) -> None:
    # Two gzip members: the first (two pages) is whole, the second is cut in half,
    # as a download killed part-way through the file would leave it.
    first = gzip.compress(("\n".join(SAMPLE[:4]) + "\n").encode(), mtime=0)
    second = gzip.compress(("\n".join(SAMPLE[6:8]) + "\n").encode(), mtime=0)
    path = tmp_path / "enwiki-20240501-cirrussearch-content.json.gz"
    path.write_bytes(first + second[: len(second) // 2])

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_cirrus_documents(path, "en"):
            rows.append(row)

    assert [row["title"] for row in rows] == ["Anarchism", "Anarchist", "Mercury"]
    assert caught.value.source == str(path)
    assert caught.value.position.startswith("line ")
    assert caught.value.last_item == "Mercury"
    assert path.name in str(caught.value)


def test_plain_file_cut_inside_a_line_is_truncation_not_an_issue(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-cirrussearch-content.json"
    path.write_text("\n".join(SAMPLE[:3]) + "\n" + SAMPLE[3][:20], encoding="utf-8")
    issues: list[dict] = []

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_cirrus_documents(path, "en", on_issue=issues.append):
            rows.append(row)

    assert [row["title"] for row in rows] == ["Anarchism", "Anarchist"]
    assert caught.value.position == "line 4"
    assert caught.value.last_item == "Anarchism"
    assert issues == []


@pytest.mark.parametrize(("first_line", "shown"), [
    (SAMPLE[1], SAMPLE[1][:60]),  # a document where the action line should be: not bulk format
    ("<!DOCTYPE html><html><body>Service unavailable</body></html>", "<!DOCTYPE html><html><body>Service unavailable</body></html>"),
])
def test_a_file_that_does_not_open_with_an_action_line_is_not_a_cirrus_dump(
        tmp_path: Path, first_line: str, shown: str) -> None:
    path = _write_gz(tmp_path / "enwiki-20240501-cirrussearch-content.json.gz", [first_line, *SAMPLE])
    issues: list[dict] = []

    with pytest.raises(InputFormatError) as caught:
        list(iter_cirrus_documents(path, "en", on_issue=issues.append))

    assert not isinstance(caught.value, TruncatedInputError)
    assert (caught.value.position, caught.value.reason) == (
        "line 1", f'not a CirrusSearch bulk dump: the first line is not an {{"index": …}} action line ({shown!r})')
    assert issues == []


# -- parts: several workers share one gzip stream -------------------------------------------------------------------
def _busy_dump(path: Path, copies: int = 40, cut: float = 1.0) -> list[str]:
    """SAMPLE over and over with every kind of line the parser must carry across a part boundary: action lines
    waiting for their document, blank lines and non-objects between them, malformed JSON, orphans, other namespaces;
    random words keep it from compressing to a few blocks. Written as two gzip members (as concatenated dumps are),
    cut to the ``cut`` share of its bytes; returns the lines."""
    words = random.Random(7)
    lines: list[str] = []
    for n in range(copies):
        text = " ".join(f"{words.getrandbits(40):x}" for _ in range(30))
        lines += [_action(str(1000 + n)), "", "[1]",
                  _doc(f"Page {n}", text=text, redirect=[{"namespace": 0, "title": f"Alias {n}"}])]
        lines += SAMPLE[2 * (n % 4): 2 * (n % 4) + 2]
        if n % 5 == 0:
            lines += [_action(str(2000 + n)), _action(str(3000 + n)), _doc(f"Second {n}", text=text[::-1])]
        if n % 7 == 0:
            lines += [_action(str(4000 + n)), '{"title": "broken', _doc(f"Orphan {n}")]
        if n % 9 == 0:
            lines += ['{"index": null}', _doc(f"No id {n}"), _action(str(5000 + n)), "   "]
    lines.append(_action("9999"))  # waits at the end of the file
    half = len(lines) // 2
    data = (gzip.compress(("\n".join(lines[:half]) + "\n").encode(), mtime=0)
            + gzip.compress(("\n".join(lines[half:]) + "\n").encode(), mtime=0))
    path.write_bytes(data[: int(len(data) * cut)])
    return lines


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of a few lines read 64 compressed bytes at a time, so a small file has many positions to cut at."""
    import functools

    import tasks.dumps.lines as lines

    monkeypatch.setattr(lines, "LINE_BLOCK_BYTES", 1)
    monkeypatch.setattr(lines, "iter_positioned_blocks", functools.partial(lines.iter_positioned_blocks, block_size=64))


def _parse(path: Path, part: Part) -> tuple[list[dict], list[dict], TruncatedInputError | None]:
    rows: list[dict] = []
    issues: list[dict] = []
    try:
        for row in iter_cirrus_documents(path, "en", on_issue=issues.append, part=part):
            rows.append(row)
    except TruncatedInputError as exc:
        return rows, issues, exc
    return rows, issues, None


def _block_positions(path: Path) -> list[int]:
    from tasks.dumps.lines import iter_line_blocks

    positions = set()
    with pytest.raises(TruncatedInputError):
        for block in iter_line_blocks(path):
            positions.add(block.position)
    return sorted(positions)


def _parts(cuts: list[int]) -> list[Part]:
    ends: list[int | None] = [*cuts, None]
    return [Part(start, end) for start, end in zip([0, *cuts], ends, strict=True)]


def test_parts_of_a_file_give_exactly_what_the_whole_file_gives(tmp_path: Path, small_blocks: None) -> None:
    from tasks.dumps.lines import iter_line_blocks

    path = tmp_path / "enwiki-20240501-cirrussearch-content.json.gz"
    lines = _busy_dump(path)
    whole_rows, whole_issues, _ = _parse(path, WHOLE)
    blocks = list(iter_line_blocks(path))
    positions = sorted({block.position for block in blocks})
    assert len(positions) > 50 and len(whole_rows) > 100
    assert {issue["reason"] for issue in whole_issues} >= {
        "action line without its document", "action line without its document at the end of the file",
        "expected a JSON object, found list", "document without its action line (no page id)"}

    splits = [[cut] for cut in positions[:-1]] + [positions[5:-1:17], positions[1:-1:3]]
    for cuts in splits:
        parsed = [_parse(path, part) for part in _parts(cuts)]
        assert [row for rows, _, _ in parsed for row in rows] == whole_rows, cuts
        assert [issue for _, issues, _ in parsed for issue in issues] == whole_issues, cuts
        assert all(cut is None for _, _, cut in parsed)
    # the splits did put action lines and their documents in different parts
    first_lines = [next(block.first for block in blocks if block.position > cut) for cut in positions[:-1]]
    before = [[line for line in lines[:first - 1] if line.strip() and line != "[1]"][-1] for first in first_lines]
    assert sum(line.startswith('{"index"') for line in before) >= 5


def test_a_cut_file_in_parts_is_reported_once_by_the_last_part(tmp_path: Path, small_blocks: None) -> None:
    path = tmp_path / "enwiki-20240501-cirrussearch-content.json.gz"
    _busy_dump(path, cut=0.75)
    whole_rows, whole_issues, whole_cut = _parse(path, WHOLE)
    assert whole_cut is not None and whole_rows

    positions = _block_positions(path)
    assert len(positions) > 20
    for cuts in ([positions[len(positions) // 2]], [positions[2], positions[-2]]):
        parsed = [_parse(path, part) for part in _parts(cuts)]
        assert [row for rows, _, _ in parsed for row in rows] == whole_rows
        assert [issue for _, issues, _ in parsed for issue in issues] == whole_issues
        assert [cut is None for _, _, cut in parsed] == [True] * len(cuts) + [False]
        last_cut = parsed[-1][2]
        assert last_cut is not None
        assert (last_cut.source, last_cut.position, last_cut.reason) == (whole_cut.source, whole_cut.position, whole_cut.reason)


def test_ingest_in_parts_registers_the_same_rows_in_file_order(tmp_path: Path, small_blocks: None,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks import compute
    from tasks.dumps import ingest
    from tasks.warehouse.db import Warehouse

    path = tmp_path / "enwiki-20240501-cirrussearch-content.json.gz"
    _busy_dump(path, copies=60, cut=0.8)
    whole_rows, whole_issues, whole_cut = _parse(path, WHOLE)
    assert whole_cut is not None
    monkeypatch.setenv("BABELBENCH_COMPUTE", "inline")
    monkeypatch.setattr(ingest, "PART_MIN_BYTES", 1)
    monkeypatch.setattr(compute, "parallelism", lambda: 3)
    assert len(ingest.plan_units("en", {"cirrus": path}, parallelism=3)) == 3

    with Warehouse(tmp_path / "home") as wh:
        output = ingest.ingest_documents(wh, "en", {"cirrus": path}, "fp", max_docs=None)
        assert wh.query_dicts(f"SELECT {', '.join(DOCUMENT_COLUMNS)} FROM documents_raw") == whole_rows
        assert wh.query("SELECT count(*) FROM lake_shards WHERE table_name = 'documents_raw'") == [(3,)]
    cut_issue = {"source": str(path), "position": whole_cut.position, "item": whole_cut.last_item,
                 "reason": ingest.TRUNCATED + whole_cut.reason}
    assert output.issues == [*whole_issues, cut_issue]


def test_a_cut_part_that_read_no_article_names_the_last_one_read_before_it() -> None:
    from tasks.dumps.ingest import InputBreak, UnitResult, _breaks, settle_breaks

    cut = InputBreak("dump.json.gz", "line 90", "the file ends inside a line", True, None)
    results = [UnitResult([], 5, last_title="Zebra"), UnitResult([], 0), UnitResult([], 0, stopped=cut)]

    assert settle_breaks(_breaks(results), 5) == [
        {"source": "dump.json.gz", "position": "line 90", "item": "Zebra", "reason": "truncated: the file ends inside a line"}]
