"""A Dask cluster on loopback for the tests that reach one the way an operator's existing cluster is reached
(``DASK_SCHEDULER_ADDRESS``): a scheduler and worker processes of its own, not the pipeline's shared local cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A scheduler and two single-threaded worker processes on loopback."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as local:
        yield local
