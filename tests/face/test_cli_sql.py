"""`babelbench sql`: CSV and JSON output, --home vs BABELBENCH_HOME, clear errors."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.warehouse.db import Warehouse


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "BABELBENCH_HOME"} | (env or {})
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, env=full_env, timeout=120)


@pytest.fixture
def filled(tmp_path: Path) -> Path:
    home = tmp_path / "wh"
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO ingest_issues VALUES ('fp', 'documents', 'ja', 'a,b.xml', 'line 3', '東京', 'bad \"quote\"')")
    return home


def test_sql_prints_csv_with_header_and_quoting(filled: Path) -> None:
    result = _cli("--home", str(filled), "sql", "SELECT cell, source, item, reason FROM ingest_issues")
    assert result.returncode == 0, result.stderr
    assert list(csv.reader(io.StringIO(result.stdout))) == [
        ["cell", "source", "item", "reason"], ["ja", "a,b.xml", "東京", 'bad "quote"']]


def test_sql_json_and_home_from_environment(filled: Path) -> None:
    result = _cli("sql", "--json", "SELECT cell, 1 + 1 AS two FROM ingest_issues", env={"BABELBENCH_HOME": str(filled)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"cell": "ja", "two": 2}]


def test_sql_with_no_rows_still_prints_the_header(filled: Path) -> None:
    result = _cli("--home", str(filled), "sql", "SELECT lang, title FROM documents")
    assert result.stdout.splitlines() == ["lang,title"]


def test_sql_errors_are_clear_and_exit_non_zero(filled: Path, tmp_path: Path) -> None:
    bad = _cli("--home", str(filled), "sql", "SELECT nope FROM documents")
    assert bad.returncode == 2 and "nope" in bad.stderr and "Traceback" not in bad.stderr
    missing = _cli("--home", str(tmp_path / "empty"), "sql", "SELECT 1")
    assert missing.returncode == 2 and "no warehouse at" in missing.stderr
