"""The warehouse on a DuckLake (a real PostgreSQL catalog): the same schema as the embedded file, its URL, upserts
on the migrations' keys, snapshots, and the extensions from their packages."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from tasks.dumps.appearance import record_appearance
from tasks.errors import BabelbenchError, ConfigError
from tasks.home import open_warehouse
from tasks.stage import ReadFields, run_stage
from tasks.warehouse.db import Warehouse, upsert
from tasks.warehouse.lake import LAKE_ENV
from tasks.warehouse.location import WAREHOUSE_ENV, parse_location
from tests.support.cell_writer import STAGE, compute

COLUMNS = ("SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
           " WHERE table_schema = 'main' AND table_name NOT LIKE '%\\_\\_cells' ESCAPE '\\' ORDER BY ALL")


def test_a_ducklake_has_every_table_and_view_of_the_embedded_warehouse_with_the_same_columns(
        ducklake: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_lake = open_warehouse(home).query(COLUMNS)
    monkeypatch.delenv(WAREHOUSE_ENV)
    embedded = open_warehouse(tmp_path / "embedded").query(COLUMNS)
    assert len(on_lake) > 300 and on_lake == embedded


def test_an_upsert_keeps_one_row_per_key_on_a_ducklake(ducklake: str, home: Path) -> None:
    wh = Warehouse(home)
    with wh.transaction() as cur:
        upsert(cur, "clir_collections", [["a", ["en"], False, "{}"], ["b", ["de"], True, "{}"]], then="now()")
    with wh.transaction() as cur:
        upsert(cur, "clir_collections", [["a", ["en", "ja"], True, '{"v": 2}']], then="now()")
    assert wh.query("SELECT name, langs, multi, config FROM clir_collections ORDER BY name") == [
        ("a", ["en", "ja"], True, '{"v": 2}'), ("b", ["de"], True, "{}")]


def test_an_earlier_dump_of_a_wiki_moves_its_articles_first_appearance_back_on_a_ducklake(
        ducklake: str, home: Path) -> None:
    """The second dump of a wiki updates first_seen's rows (a MERGE that updates: see tasks/dumps/appearance.py)."""
    wh = Warehouse(home)
    run_stage(wh, STAGE, "xx", ReadFields(values={"rows": 50}), {}, compute(wh, "xx", 50))  # 50 articles of wiki xx
    record_appearance(wh, "xx", "20240120")
    record_appearance(wh, "xx", "20240110")
    record_appearance(wh, "xx", "20240115")  # a later one moves nothing
    assert wh.query("SELECT key_kind, count(*), min(dump_date), max(dump_date) FROM first_seen GROUP BY ALL"
                    " ORDER BY ALL") == [("page_id", 50, date(2024, 1, 10), date(2024, 1, 10)),
                                         ("title", 50, date(2024, 1, 10), date(2024, 1, 10))]


def test_a_past_snapshot_reads_the_tables_as_they_were_and_the_embedded_warehouse_says_it_has_none(
        ducklake: str, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wh = Warehouse(home)
    with wh.transaction() as cur:
        upsert(cur, "clir_collections", [["a", ["en"], False, "{}"]], then="now()")
    before = wh.snapshot()
    with wh.transaction() as cur:
        cur.execute("DELETE FROM clir_collections")
    assert wh.snapshot() > before and wh.query("SELECT count(*) FROM clir_collections") == [(0,)]
    past = Warehouse(home, as_of=before)
    assert past.query("SELECT name, langs FROM clir_collections") == [("a", ["en"])] and past.snapshot() == before
    with pytest.raises(BabelbenchError, match=r"no snapshot 99999 \(it has snapshots up to"):
        Warehouse(home, as_of=99999).query("SELECT 1")
    monkeypatch.delenv(WAREHOUSE_ENV)
    with pytest.raises(ConfigError, match="keeps no snapshots"):
        Warehouse(tmp_path / "embedded", as_of=1)


def test_the_extensions_come_from_their_packages_with_network_installs_off(ducklake: str, home: Path) -> None:
    wh = Warehouse(home)
    loaded = dict(wh.query("SELECT extension_name, install_path FROM duckdb_extensions() WHERE loaded"))
    assert {"ducklake", "postgres_scanner"} <= loaded.keys()
    assert wh.query("SELECT current_setting('autoinstall_known_extensions'),"
                    " current_setting('autoload_known_extensions')") == [(False, False)]


def test_a_ducklake_keeps_the_lake_it_was_created_with(ducklake: str, home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    Warehouse(home)
    from tasks.warehouse import db

    db._catalogs.clear()  # as another process would: attach anew
    monkeypatch.setenv(LAKE_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(BabelbenchError, match="names another lake than the one the DuckLake"):
        Warehouse(home)


@pytest.mark.parametrize(("value", "problem"), [
    ("postgres://db/bb", "expected nothing"),
    ("ducklake:postgres:", "is empty"),
    ("ducklake:postgres:host=db password=hunter2", "carries a password"),
    ("ducklake:postgres:postgresql://bb:hunter2@db/bb", "carries a password"),
])
def test_a_bad_warehouse_url_is_refused_saying_what_is_wrong(value: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=problem) as refused:
        parse_location(value, tmp_path)
    assert "hunter2" not in str(refused.value)
