"""Opening a home's MLflow store for a flow run: created and migrated once, its schema check kept cheap.

MLflow checks a SQL store's schema every time a process opens it: it asks
alembic for the head revision of MLflow's migration scripts (a read of every
script) and compares it with the revision the database records. The head is a
property of the installed MLflow, so after one open has passed that check, the
revision is recorded beside the database (``mlflow.db.schema.json``: MLflow's
version and the revision). A later open by the same MLflow version takes the
head from that record and only reads the database's own revision: a store
migrated by another MLflow since is still refused, with MLflow's own message.
A new store is created and migrated by MLflow as usual; another MLflow version
goes through the full check and records its own revision. Stores that are not
SQLite files (``MLFLOW_TRACKING_URI`` naming a server or another database) are
opened by MLflow alone.

Two flow runs starting together on a fresh home would both create the SQLite
store (MLflow's schema migration fails in the second: "Online migration
expected to match one row") and both create the flow's experiment (the second
fails: it already exists), so the store is opened under a lock file in the home.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tasks.warehouse.waiting import wait_seconds

SQLITE = "sqlite:///"
TRACKING_ENV = "MLFLOW_TRACKING_URI"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_ID"
STAMP_SUFFIX = ".schema.json"


def open_store(uri: str, home: Path, experiment: str | None = None) -> Any:
    """A client of the store ``uri``; with ``experiment``, MLflow is also pointed at the store and that experiment
    (artifacts under the home, created if missing) is made current."""
    from filelock import FileLock
    from mlflow.tracking import MlflowClient

    home.mkdir(parents=True, exist_ok=True)
    database = Path(uri.removeprefix(SQLITE)) if uri.startswith(SQLITE) else None
    stamp = database.with_name(database.name + STAMP_SUFFIX) if database is not None else None
    with FileLock(str(home / "mlflow.lock"), timeout=wait_seconds(), thread_local=False):
        head = _schema_head(stamp) if stamp is not None else None
        with _known_head(head):
            client = MlflowClient(uri)
            if experiment is not None and client.get_experiment_by_name(experiment) is None:
                _create_experiment(client, experiment, (home / "mlartifacts").as_uri() if _is_local(uri) else None)
        if stamp is not None and head is not None:
            _record(stamp, head)
    if experiment is not None:
        _point_mlflow(uri, experiment)
    return client


def _is_local(uri: str) -> bool:
    """Whether ``uri`` is a store of this machine's (a SQLite file, a folder) rather than a tracking server or a
    shared database, whose experiments keep their artifacts where the server says (its artifact store)."""
    return uri.startswith((SQLITE, "file:")) or "://" not in uri


def _create_experiment(client: Any, name: str, artifacts: str | None) -> None:
    """Create experiment ``name`` (artifacts in ``artifacts``, None: the server's store); one that another machine
    created meanwhile is fine (the home's lock serialises this machine's processes only)."""
    from mlflow.exceptions import MlflowException

    try:
        client.create_experiment(name, artifact_location=artifacts)
    except MlflowException:
        if client.get_experiment_by_name(name) is None:
            raise


def _point_mlflow(uri: str, experiment: str) -> None:
    """Make ``uri`` and ``experiment`` MLflow's current store and experiment, without MLflow's copies of them into
    ``MLFLOW_TRACKING_URI`` and ``MLFLOW_EXPERIMENT_ID``: the first is the user's choice of store for every home,
    and both are inherited by child processes, so a process that then opens another home (a worker, a test
    session) or starts a command would track into the first home's store and experiment."""
    import mlflow

    chosen = {name: os.environ.get(name) for name in (TRACKING_ENV, EXPERIMENT_ENV)}
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    for name, value in chosen.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _schema_head(stamp: Path) -> str:
    """The head revision of the installed MLflow's migrations: the stamp's when it is this MLflow version's."""
    import mlflow
    from mlflow.store.db import utils

    try:
        recorded = json.loads(stamp.read_text())
        if recorded.get("mlflow") == mlflow.__version__ and isinstance(recorded.get("revision"), str):
            return recorded["revision"]
    except (OSError, ValueError):
        pass
    return utils._get_latest_schema_revision()


@contextmanager
def _known_head(head: str | None) -> Iterator[None]:
    """MLflow's schema check takes ``head`` as the latest revision instead of reading its migration scripts."""
    if head is None:
        yield
        return
    from mlflow.store.db import utils

    read_scripts = utils._get_latest_schema_revision
    utils._get_latest_schema_revision = lambda: head
    try:
        yield
    finally:
        utils._get_latest_schema_revision = read_scripts


def _record(stamp: Path, head: str) -> None:
    """Write the stamp (atomically) unless it already says this."""
    import mlflow

    content = json.dumps({"mlflow": mlflow.__version__, "revision": head})
    try:
        if stamp.read_text() == content:
            return
    except OSError:
        pass
    temporary = stamp.with_name(f".{stamp.name}.tmp")
    temporary.write_text(content)
    os.replace(temporary, stamp)
