"""Prefect flows: composition only; the logic lives in ``tasks``.

The stage library logs through the standard ``logging`` module under the
``tasks`` logger; Prefect shows those records in flow-run logs (the UI, the
CLI, workers) only for loggers it is told about, so that is set before
Prefect reads its settings.
"""

import os

os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "tasks")
