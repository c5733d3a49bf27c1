"""A user error (unknown language, unknown stage) is one line on the terminal, not Prefect's traceback.

The CLI runs for real in a child process with no Prefect API configured, so it
also starts (and stops) its own loopback API server as a user's run does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.sample.mirror import build_sample_mirror

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "DO_NOT_TRACK": "1", "COLUMNS": "200"}
    env.pop("PREFECT_LOGGING_LEVEL", None)  # the default level, as a user has it: errors are logged
    return subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(tmp_path / "home"), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    assert not [line for line in output.splitlines() if "ERROR" in line or "Finished in state Failed" in line], output
    return errors[0]


def test_unknown_language_and_unknown_stage_are_one_line_each(tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    language = _one_error_line(_cli(tmp_path, "corpus", "ingest", "--lang", "en,xx", "--source", mirror.root.as_uri()))
    assert "xx" in language
    stage = _one_error_line(_cli(tmp_path, "clir", "build", "--name", "c", "--langs", "en,de", "--force", "indexx"))
    assert "indexx" in stage and "retrieval" in stage  # names the bad stage and the valid ones


def test_an_eclektic_build_over_languages_without_sitelinks_is_one_line(tmp_path: Path) -> None:
    line = _one_error_line(_cli(tmp_path, "qa", "build", "--recipe", "eclektic", "--langs", "en,ko"))
    assert "en, ko" in line and "corpus ingest --lang en,ko" in line


def test_verbose_keeps_the_traceback(tmp_path: Path) -> None:
    result = _cli(tmp_path, "--verbose", "clir", "build", "--name", "c", "--langs", "en,de", "--force", "indexx")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" in output and "indexx" in output
