"""Register ``prefect.yaml``'s deployments with the Prefect server at ``PREFECT_API_URL``.

Creates the ``babelbench`` process work pool when it is missing, then runs
``prefect deploy --all`` non-interactively. ``BABELBENCH_REPO`` (default: this
checkout) is where workers run the flows from.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK_POOL = "babelbench"


def _prefect(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"BABELBENCH_REPO": os.environ.get("BABELBENCH_REPO", str(REPO)), "DO_NOT_TRACK": "1"}
    return subprocess.run([sys.executable, "-m", "prefect", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, check=check)


def ensure_pool() -> None:
    """Create the ``babelbench`` process work pool on the server at ``PREFECT_API_URL`` unless it exists."""
    if _prefect("work-pool", "inspect", WORK_POOL, check=False).returncode != 0:
        _prefect("work-pool", "create", WORK_POOL, "--type", "process")


def register() -> str:
    """Ensure the work pool exists and deploy everything in prefect.yaml; returns Prefect's output."""
    ensure_pool()
    return _prefect("--no-prompt", "deploy", "--all").stdout


if __name__ == "__main__":
    try:
        print(register())
    except subprocess.CalledProcessError as exc:
        sys.exit(f"prefect {' '.join(exc.cmd[3:])} failed:\n{exc.stdout}\n{exc.stderr}")
