"""The code version recorded with every stage run and MLflow run."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def code_version() -> str:
    """Package version plus the git commit (and ``-dirty``) when run from a checkout.

    Recorded, not hashed into fingerprints: a commit that does not change a
    stage must not invalidate its cache; stage versions do that on purpose.
    """
    try:
        base = version("babelbench")
    except PackageNotFoundError:
        base = "0+unknown"
    try:
        sha = subprocess.run(
            ["git", "-C", str(_REPO), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return base
    return f"{base}+g{sha}" if sha else base
