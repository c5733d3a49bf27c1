"""How long a warehouse operation waits for other writers: ``BABELBENCH_WAREHOUSE_WAIT`` seconds (default 300).

The embedded file waits that long for another process's hold on it (:mod:`tasks.warehouse.embedded`); a commit to
a DuckLake keeps replaying that long while other writers' commits conflict with it (:mod:`tasks.warehouse.replay`).
"""

from __future__ import annotations

import os

from tasks.errors import ConfigError

WAIT_ENV = "BABELBENCH_WAREHOUSE_WAIT"
DEFAULT_WAIT_SECONDS = 300.0


def wait_seconds() -> float:
    """``BABELBENCH_WAREHOUSE_WAIT`` in seconds; a clear error for anything but a number >= 0."""
    raw = os.environ.get(WAIT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_WAIT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{WAIT_ENV}={raw!r}: expected a number of seconds") from None
    if value < 0:
        raise ConfigError(f"{WAIT_ENV}={raw!r}: expected a number of seconds >= 0")
    return value
