"""Opening the home's MLflow store: migrated when new, its schema check kept cheap while the store is current.

Each opening is a fresh process (MLflow keeps an opened store for the rest of a
process), which counts the calls of MLflow's migration entry point
(``_upgrade_db``) and of the read of its migration scripts' head revision
(``_get_latest_schema_revision``, the expensive half of its schema check).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import mlflow

from tasks.mlflow_store import STAMP_SUFFIX

REPO = Path(__file__).resolve().parents[2]
#: one flow run's tracking start in a fresh process, MLflow's migration and head reads counted
OPEN = """
import json, sys
from pathlib import Path
from mlflow.store.db import utils

calls = {"migrations": 0, "head_reads": 0}
for name, key in (("_upgrade_db", "migrations"), ("_get_latest_schema_revision", "head_reads")):
    def spy(*args, _real=getattr(utils, name), _key=key, **kwargs):
        calls[_key] += 1
        return _real(*args, **kwargs)
    setattr(utils, name, spy)

from pydantic import BaseModel
from tasks.tracking import tracked_run
from tasks.warehouse.db import Warehouse

class Params(BaseModel):
    x: int = 1

with Warehouse(Path(sys.argv[1])) as wh, tracked_run(wh, "import", Params()) as run:
    pass
print(json.dumps(calls))
"""


def _open(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", OPEN, str(home)], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={"DO_NOT_TRACK": "1", "PATH": "/usr/bin:/bin"})


def _calls(home: Path) -> dict[str, int]:
    done = _open(home)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_new_store_is_migrated_once_and_a_current_one_is_opened_without_reading_the_migrations(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stamp = home / f"mlflow.db{STAMP_SUFFIX}"
    assert _calls(home) == {"migrations": 1, "head_reads": 1}  # created and migrated by MLflow, head read once
    head = json.loads(stamp.read_text())
    assert head["mlflow"] == mlflow.__version__
    with sqlite3.connect(home / "mlflow.db") as db:  # the revision recorded is the one the store is at
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(head["revision"],)]
    assert _calls(home) == {"migrations": 0, "head_reads": 0}  # current: no migration, no read of the scripts

    # a stamp of another MLflow version is not trusted: the full check runs once and records this version
    stamp.write_text(json.dumps({"mlflow": "0.0.1", "revision": "not-a-revision"}))
    assert _calls(home) == {"migrations": 0, "head_reads": 1}
    assert json.loads(stamp.read_text()) == head


def test_a_store_migrated_elsewhere_is_still_refused_with_mlflow_s_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _calls(home)["migrations"] == 1
    with sqlite3.connect(home / "mlflow.db") as db:  # as if another MLflow had migrated it since
        db.execute("UPDATE alembic_version SET version_num = 'ffffffffffff'")
    refused = _open(home)
    assert refused.returncode != 0 and "Detected out-of-date database schema (found version ffffffffffff" \
        in refused.stderr
