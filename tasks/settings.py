"""Where babelbench keeps its state: one home directory per warehouse.

``--home DIR`` on the CLI or ``BABELBENCH_HOME`` selects it; the default is
``./.babelbench`` so a laptop run needs no configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "BABELBENCH_HOME"
DEFAULT_HOME = Path(".babelbench")


def resolve_home(home: str | Path | None = None) -> Path:
    """The absolute home directory: the argument, else ``$BABELBENCH_HOME``, else ``./.babelbench``."""
    chosen = Path(home) if home else Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)
    path = chosen.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path
