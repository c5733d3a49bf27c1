"""A CLIRMatrix collection's files as an import: what the format's ids, labels and documents must be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import InputFormatError
from tasks.imports.common import import_dataset
from tasks.warehouse.db import Warehouse

GOOD = {"src_id": "12", "src_query": "Velna", "tgt_results": [["640", 6], ["1830", 3]]}
DOCS = "640\tVelna Die Velna ist ein Fluss.\n1830\tTarsk Tarsk liegt an der Velna.\n"


def _collection(root: Path, second_line: object, docs: str = DOCS) -> Path:
    """Collection ``c``: an en→de test1 file whose second line is ``second_line``, and the de documents."""
    directory = root / "c"
    (directory / "docs").mkdir(parents=True)
    lines = [json.dumps(GOOD), second_line if isinstance(second_line, str) else json.dumps(second_line)]
    (directory / "en.de.test1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (directory / "docs" / "de.tsv").write_text(docs, encoding="utf-8")
    return directory


@pytest.mark.parametrize("second_line, message", [
    # the format's ids are strings: a JSON number is refused by the reader, with the line
    ({"src_id": 13, "src_query": "Tarsk", "tgt_results": [["1830", 6]]}, "src_id must be a non-empty string, got 13"),
    ({"src_id": "13", "src_query": "Tarsk", "tgt_results": [[1830, 6]]}, r"query 13: result 0: doc id 1830 is not a non-empty string"),
    # a string that is not a page id's own decimal text would merge with another id ("0640" is 640)
    ({"src_id": "13", "src_query": "Tarsk", "tgt_results": [["0640", 6]]}, r"id '0640' is not a page id"),
    ({"src_id": "\uff11\uff13", "src_query": "Tarsk", "tgt_results": [["1830", 6]]}, r"id '１３' is not a page id"),
    ({"src_id": "13", "src_query": "Tarsk", "tgt_results": [["1830", 7]]}, r"query 13: result 0 \(1830\): label 7 is not an int 0-6"),
    ({"src_id": "13", "src_query": "Tarsk", "tgt_results": [["1830", -1]]}, r"query 13: result 0 \(1830\): label -1 is not an int 0-6"),
    ({"src_id": "12", "src_query": "Velna", "tgt_results": [["1830", 6]]}, "query 12 appears twice in the file"),
    # 977 is judged but not in docs/de.tsv: its judgement would point at an empty document
    ({"src_id": "13", "src_query": "Tarsk", "tgt_results": [["1830", 6], ["977", 2]]},
     r"judged document 977 is not in .*docs/de.tsv"),
])
def test_a_bad_line_is_an_error_naming_the_file_and_line_and_nothing_is_imported(
        tmp_path: Path, second_line: object, message: str) -> None:
    source = _collection(tmp_path / "src", second_line)
    with Warehouse(tmp_path / "home") as wh:
        with pytest.raises(InputFormatError, match=rf"en\.de\.test1\.jsonl at line 2: {message}"):
            import_dataset(wh, "clirmatrix", source, None, None)
        assert wh.query("SELECT * FROM clir_collections") == []
        assert wh.scalar("SELECT count(*) FROM documents_raw") == 0


@pytest.mark.parametrize("docs, message", [
    ("640\tVelna\n1830\tTarsk\n640\tVelna again\n", "line 3: document 640 appears twice"),
    ("640\tVelna\n01830\tTarsk\n", r"line 2: id '01830' is not a page id"),
])
def test_a_bad_documents_line_is_named(tmp_path: Path, docs: str, message: str) -> None:
    source = _collection(tmp_path / "src", {"src_id": "13", "src_query": "Tarsk", "tgt_results": [["640", 1]]}, docs)
    with Warehouse(tmp_path / "home") as wh, pytest.raises(InputFormatError, match=rf"de\.tsv at {message}"):
        import_dataset(wh, "clirmatrix", source, None, None)
