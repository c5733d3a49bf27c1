"""The warehouse: migrations, atomic cell replacement, lake views, language rules."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.errors import ConfigError
from tasks.home import open_warehouse
from tasks.warehouse import embedded, migrations, waiting, writers
from tasks.text.languages import OVERRIDES_ENV, reload_rules, rules_digest
from tasks.warehouse.db import Reference, Warehouse
from tasks.warehouse.lake import LAKE_TABLES, ShardWriter, cell_dir, sweep_abandoned


def _doc(lang: str, page_id: int, title: str) -> dict:
    return {"lang": lang, "page_id": page_id, "title": title, "text": f"text of {title}", "qid": None, "namespace": 0,
            "is_redirect": False, "redirect_target": None, "is_disambiguation": False, "timestamp": None, "source": "t"}


def _write_cell(wh: Warehouse, lang: str, fp: str, titles: list[str]) -> Path:
    directory = cell_dir(wh.lake_root, "documents_raw", lang, fp)
    writer = ShardWriter(wh.lake_root, directory, LAKE_TABLES["documents_raw"], fp, rows_per_shard=2)
    writer.extend(_doc(lang, i + 1, t) for i, t in enumerate(titles))
    writer.flush()
    wh.replace_cell("documents_raw", lang, fp, writer.shards)
    return directory


def test_migrations_are_applied_once_and_recorded(tmp_path: Path) -> None:
    expected = [m.version for m in migrations.available_migrations()]
    assert expected == sorted(expected) and expected[0] == 1
    with Warehouse(tmp_path) as wh:
        assert [r[0] for r in wh.query("SELECT version FROM schema_migrations ORDER BY version")] == expected
        first_id = wh.warehouse_id
    with Warehouse(tmp_path) as wh:  # reopening applies nothing new and keeps the identity
        assert wh.scalar("SELECT count(*) FROM schema_migrations") == len(expected)
        assert wh.warehouse_id == first_id


def test_an_edited_applied_migration_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Warehouse(tmp_path).close()
    original = migrations.available_migrations()
    edited = [migrations.Migration(m.version, m.name, m.sql + "\n-- edited") for m in original]
    monkeypatch.setattr(migrations, "available_migrations", lambda: edited)
    with pytest.raises(ConfigError, match="001_core.sql changed after it was applied"):
        Warehouse(tmp_path)


def test_replace_cell_switches_only_that_cell_and_removes_old_shards(tmp_path: Path) -> None:
    with Warehouse(tmp_path) as wh:
        old_dir = _write_cell(wh, "en", "a" * 64, ["One", "Two", "Three"])
        _write_cell(wh, "ja", "b" * 64, ["東京"])
        assert wh.query("SELECT lang, count(*) FROM documents GROUP BY lang ORDER BY lang") == [("en", 3), ("ja", 1)]
        assert len(list(old_dir.glob("*.parquet"))) == 2  # 3 rows at 2 rows per shard
        _write_cell(wh, "en", "c" * 64, ["Four"])
        assert wh.query("SELECT title, fingerprint FROM documents WHERE lang = 'en'") == [("Four", "c" * 64)]
        assert wh.query("SELECT title FROM documents WHERE lang = 'ja'") == [("東京",)]
        assert list(old_dir.glob("*.parquet")) == []


def test_a_query_that_started_before_a_cell_was_replaced_still_reads_the_old_shards(tmp_path: Path) -> None:
    """Another thread's stage replaces a cell while a query scans the table: the query finishes on the files it
    bound, and they are deleted once no operation is running (CI saw "Cannot open file" here)."""
    started, resume = threading.Event(), threading.Event()

    def pause(title: str) -> str:  # holds the scan after its first row, inside the first shard
        if not started.is_set():
            started.set()
            resume.wait(30)
        return title

    result: dict[str, object] = {}

    def scan(wh: Warehouse) -> None:
        try:
            with wh._cursor() as cur:
                cur.create_function("pause", pause, ["VARCHAR"], "VARCHAR")
                cur.execute("SET threads = 1")  # one scan thread: the later shards are opened after the pause
                result["rows"] = cur.execute("SELECT pause(title) FROM documents_raw WHERE lang = 'ja'").fetchall()
        except Exception as exc:  # noqa: BLE001 - reported to the test's thread
            result["error"] = exc

    with Warehouse(tmp_path) as wh:
        old_dir = _write_cell(wh, "ja", "a" * 64, [f"t{i}" for i in range(9)])
        reader = threading.Thread(target=scan, args=(wh,))
        reader.start()
        assert started.wait(30)
        _write_cell(wh, "ja", "b" * 64, ["new"])
        assert len(list(old_dir.glob("*.parquet"))) == 5  # still read by the scan
        writers.release(old_dir)  # as its stage settled it when it was published
        aged = time.time() - 10 * writers.GRACE_SECONDS
        os.utime(old_dir, (aged, aged))  # unlisted, no writer marker, old: what a sweep deletes as abandoned
        assert sweep_abandoned(wh) == []
        assert len(list(old_dir.glob("*.parquet"))) == 5
        resume.set()
        reader.join(30)
        assert "error" not in result, result
        assert sorted(result["rows"]) == [(f"t{i}",) for i in range(9)]
        assert list(old_dir.glob("*.parquet")) == []  # deleted when the scan ended
        assert wh.query("SELECT title FROM documents_raw WHERE lang = 'ja'") == [("new",)]


def test_views_survive_reopening_and_no_temp_files_are_left(tmp_path: Path) -> None:
    with Warehouse(tmp_path) as wh:
        _write_cell(wh, "en", "d" * 64, ["Alpha", "Beta"])
    with Warehouse(tmp_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM documents") == 2
    assert not list((tmp_path / "lake").rglob("*.tmp"))
    shard = next((tmp_path / "lake" / "documents_raw").rglob("*.parquet"))
    assert pq.read_schema(shard).names[-1] == "fingerprint"


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with Warehouse(tmp_path) as wh:
        with pytest.raises(RuntimeError):
            with wh.transaction() as cur:
                cur.execute("INSERT INTO ingest_issues VALUES ('f', 's', 'en', 'x', '1', 'i', 'r')")
                raise RuntimeError("crash mid-write")
        assert wh.scalar("SELECT count(*) FROM ingest_issues") == 0


def test_language_rules_table_mirrors_the_csv(tmp_path: Path) -> None:
    csv_path = Path(__file__).resolve().parents[2] / "tasks" / "text" / "languages.csv"
    rows = list(csv.DictReader(line for line in csv_path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")))
    with open_warehouse(tmp_path) as wh:
        got = dict(wh.query("SELECT lang, truncate_limit FROM language_rules"))
    assert got == {r["lang"]: int(r["truncate_limit"]) for r in rows}


def test_the_rules_mirror_follows_a_changed_override_and_is_left_alone_when_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OVERRIDES_ENV, raising=False)
    monkeypatch.setenv("BABELBENCH_HOME", str(tmp_path))
    reload_rules()
    with open_warehouse(tmp_path) as wh:
        assert wh.scalar("SELECT truncate_limit FROM language_rules WHERE lang = 'fi'") != 7
    (tmp_path / "languages.csv").write_text("lang,truncate_limit\nfi,7\n", encoding="utf-8")
    reload_rules()
    try:
        with open_warehouse(tmp_path) as wh:  # the rules changed: the mirror is rewritten
            assert wh.scalar("SELECT truncate_limit FROM language_rules WHERE lang = 'fi'") == 7

        def unexpected() -> None:
            raise AssertionError("rows built again for an unchanged digest")

        with Warehouse(tmp_path, references={"language_rules": Reference(rules_digest(), unexpected)}) as wh:
            assert wh.scalar("SELECT truncate_limit FROM language_rules WHERE lang = 'fi'") == 7
    finally:
        reload_rules()


def test_read_only_open_of_a_missing_warehouse_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no warehouse at .*babelbench corpus ingest"):
        Warehouse(tmp_path / "nowhere", read_only=True)


# -- several processes on one warehouse (see the module docstring of tasks/warehouse/embedded.py) ------------------------
_WRITER = """
import sys, time
from pathlib import Path
from tasks.warehouse.db import Warehouse
wh = Warehouse(Path(sys.argv[1]))
tag, n = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
for i in range(n):
    with wh.transaction() as cur:
        cur.execute("INSERT INTO ingest_issues VALUES (?, 's', 'en', 'x', ?, 'i', 'r')", [tag, str(i)])
    print(i, flush=True)
"""


def _writer(home: Path, tag: str, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(home), tag, str(n)], cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_file_is_held_only_while_operations_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "LINGER_SECONDS", 0.2)
    wh = open_warehouse(tmp_path)
    other = Warehouse(tmp_path)  # every Warehouse of one path in a process shares one connection
    opens = wh._db.opens
    with ThreadPoolExecutor(4) as pool:  # operations that overlap share the open file
        assert set(pool.map(lambda i: other.scalar("SELECT ?", [i]) + wh.scalar("SELECT 0"), range(200))) == set(range(200))
    assert wh._db.opens - opens <= 2
    time.sleep(0.6)  # idle past the linger: closed, so a plain DuckDB of another process can open it
    probe = subprocess.run([sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()",
                            str(tmp_path / "warehouse.duckdb")], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert wh.scalar("SELECT count(*) FROM language_rules") > 0  # and this process opens it again when needed


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    Warehouse(tmp_path).close()
    writers = [_writer(tmp_path, tag, 60) for tag in ("a", "b")]
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    with Warehouse(tmp_path, read_only=True) as wh:
        got = wh.query("SELECT fingerprint, count(*), count(DISTINCT position) FROM ingest_issues GROUP BY 1 ORDER BY 1")
    assert got == [("a", 60, 60), ("b", 60, 60)]


def test_a_busy_writer_does_not_starve_a_waiter(tmp_path: Path) -> None:
    Warehouse(tmp_path).close()
    writer = _writer(tmp_path, "busy", 100_000)  # commits back to back, and would keep the file forever if it could
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        writer.stdout.readline()  # it is writing
        waits = []
        for _ in range(5):
            started = time.monotonic()
            with Warehouse(tmp_path) as wh, wh.transaction() as cur:
                cur.execute("INSERT INTO ingest_issues VALUES ('waiter', 's', 'en', 'x', '1', 'i', 'r')")
            waits.append(time.monotonic() - started)
            assert writer.poll() is None
    finally:
        writer.kill()
        writer.wait()
    assert max(waits) < 5, waits
    with Warehouse(tmp_path, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM ingest_issues WHERE fingerprint = 'waiter'") == 5
        assert wh.scalar("SELECT count(*) FROM ingest_issues WHERE fingerprint = 'busy'") > 0


def test_the_wait_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(waiting.WAIT_ENV, "soon")
    with pytest.raises(ConfigError, match="BABELBENCH_WAREHOUSE_WAIT='soon': expected a number of seconds"):
        waiting.wait_seconds()
    monkeypatch.setenv(waiting.WAIT_ENV, "2.5")
    assert waiting.wait_seconds() == 2.5


def test_a_shard_has_dictionary_pages_only_for_columns_whose_values_repeat(tmp_path: Path) -> None:
    """Repeating columns (a language, a query id per 100 hits, ranks, a long text used by every row) are
    dictionary-encoded, scores and long texts that never repeat are written plain, and a nested column is written
    plain; every value reads back as written. The long texts hold more than the sample's byte budget, so they are
    judged on fewer rows than the short columns."""
    import numpy as np
    import pyarrow as pa
    from upath import UPath

    from tasks.warehouse.lake import write_parquet_atomic

    rows = 10_000
    table = pa.table({
        "lang": pa.repeat(pa.scalar("en"), rows),
        "query": np.repeat(np.arange(rows // 100), 100),
        "rank": np.tile(np.arange(1, 101, dtype=np.int32), rows // 100),
        "score": np.random.default_rng(3).random(rows),
        "pair": pa.array([[i % 3, i] for i in range(rows)]),
        "text": [f"{i:06d} " + "x" * 500 for i in range(rows)],
        "notice": pa.repeat(pa.scalar("y" * 2_000), rows),
    })
    path = UPath(tmp_path / "shard.parquet")
    write_parquet_atomic(table, path)
    metadata = pq.ParquetFile(path.path).metadata.row_group(0)
    encoded = {metadata.column(i).path_in_schema: metadata.column(i).encodings for i in range(metadata.num_columns)}
    dictionary = {name for name, encodings in encoded.items() if any("DICTIONARY" in e for e in encodings)}
    assert dictionary == {"lang", "query", "rank", "notice"}
    assert pq.read_table(path.path).equals(table)


def _documents_table(lang: str, first: int, count: int):
    import pyarrow as pa

    from tasks.warehouse.lake import DOCUMENT_SCHEMA

    rows = [_doc(lang, page_id, f"t{page_id}") | {"revision_id": None} for page_id in range(first, first + count)]
    return pa.Table.from_pylist(rows, schema=DOCUMENT_SCHEMA)


def test_row_groups_stream_into_shards_of_a_set_number_of_groups_named_only_once_closed(tmp_path: Path) -> None:
    """Seven batches with three row groups per shard: two shards closed on the way, the third (one group) when
    asked; until then it exists only under a temp name. The shards read back as the batches, in order, with the
    fingerprint, and the warehouse serves them."""
    import pyarrow as pa

    with Warehouse(tmp_path) as wh:
        directory = cell_dir(wh.lake_root, "documents_raw", "en", "fp")
        writer = ShardWriter(wh.lake_root, directory, LAKE_TABLES["documents_raw"], "fp", groups_per_shard=3)
        batches = [_documents_table("en", 10 * k + 1, k + 1) for k in range(7)]
        for batch in batches:
            writer.add_row_group(batch)
        assert len(writer.shards) == 2 and writer.rows == sum(range(1, 8))
        assert sorted(p.name.endswith(".tmp") for p in directory.iterdir() if p.name.startswith("part")) == [False, False, True]
        writer.close_shard()
        assert not [p for p in directory.iterdir() if p.name.endswith(".tmp")]
        files = [pq.ParquetFile(str(wh.lake_root / shard.path)) for shard in writer.shards]
        assert [f.metadata.num_row_groups for f in files] == [3, 3, 1]
        assert [shard.rows for shard in writer.shards] == [1 + 2 + 3, 4 + 5 + 6, 7]
        read = pa.concat_tables([f.read() for f in files])
        assert read.drop_columns(["fingerprint"]).equals(pa.concat_tables(batches))
        assert set(read["fingerprint"].to_pylist()) == {"fp"}
        wh.replace_cell("documents_raw", "en", "fp", writer.shards)
        assert wh.scalar("SELECT count(*) FROM documents_raw WHERE lang = 'en'") == sum(range(1, 8))


def test_a_parse_unit_that_fails_leaves_no_half_written_shard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that breaks with an error that is not about its input (a bug, an interrupt) after some batches:
    the error propagates, the shards closed before it stay whole, and the open one's temp file is removed."""
    from upath import UPath

    from tasks.dumps import ingest, records

    long_text = "x" * (records.BATCH_TEXT_CHARS // 4)  # four pages to a batch

    def pages(unit, on_issue):  # noqa: ANN001, ANN202 - the parser's signature
        for page_id in range(1, 42):  # 41 pages: ten batches of four and one of one
            yield _doc("en", page_id, f"t{page_id}") | {"text": long_text, "revision_id": None}
        raise RuntimeError("parser bug")

    monkeypatch.setattr(ingest, "_unit_pages", pages)
    monkeypatch.setattr(ingest, "GROUPS_PER_SHARD", 2)
    lake = UPath(tmp_path / "lake")
    directory = lake / "documents_raw" / "en"
    with pytest.raises(RuntimeError, match="parser bug"):
        ingest.parse_unit(ingest.ParseUnit("xml", "dump.xml", "en", 0), lake_root=lake, directory=directory, fingerprint="fp")
    names = sorted(p.name for p in directory.iterdir())
    assert len(names) == 5 and all(name.endswith(".parquet") for name in names)
    for name in names:  # every shard left is whole: closed files with 2 row groups of four pages each
        assert pq.ParquetFile(str(directory / name)).metadata.num_row_groups == 2
