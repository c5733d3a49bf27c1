"""Headless Chromium for tests: found, or the test skipped saying how to install it — unless the run requires it.

CI (``.ci/run``) installs Debian's ``chromium`` and then sets
``BABELBENCH_BROWSER_TESTS=required``: a browser test that cannot find it
there fails instead of quietly skipping.  Where Chromium truly could not be
installed the variable is unset and the tests skip with the reason.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRED = "BABELBENCH_BROWSER_TESTS"


def chromium() -> str:
    """The Chromium executable; skips the calling test without one (fails it when the run requires one)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        why = "no chromium on this machine (Debian: apt-get install chromium)"
        if os.environ.get(REQUIRED) == "required":
            pytest.fail(f"{why}, but {REQUIRED}=required")
        pytest.skip(f"{why}: what a browser renders is not checked")
    return binary
