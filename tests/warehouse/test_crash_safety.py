"""A flow process killed with SIGKILL in the middle of a long stage, then rerun, leaves exactly what a run that was
never interrupted leaves: the same tables (row counts and content hashes), the same lake with no orphan shard, the
same indexes with no half-written one, and no paid call made twice.

The killed runs are real CLI processes (``python -m tests.support.crash_entry``, the CLI with one pause point armed so the
kill lands at a chosen point inside a stage rather than after a guessed sleep: see tests/support/crash_entry.py); the reruns
are the plain CLI. The uninterrupted runs are the same flows run in this process. Which columns legitimately differ
between the two homes (run ids, wall-clock times …) is listed and justified in tests/support/home_snapshot.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.pairing.config import ClirConfig
from tasks.processes import child_dies_with_us
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse
from tests.support.crash_entry import PAUSE_ENV, PAUSED_ENV
from tests.support.fake_llm_server import FakeLLMServer, prompt_of
from tests.support.home_snapshot import crashed_runs, index_snapshot, lake_files, lake_problems, table_snapshot

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
LANGS = ["en", "de"]
SMALL = ClirConfig(top_k=20, min_documents=10)
#: a few title queries per language for comparing the indexes' answers
QUERIES = {"en": ["river bridge", "city", "the history of music"], "de": ["Brücke", "Stadt", "Geschichte der Musik"]}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A CLI process's environment: the test's Prefect API (no server of its own to start), parsing in-process."""
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if k not in {"BABELBENCH_HOME", "MLFLOW_TRACKING_URI", PAUSE_ENV}}
    return env | {"PREFECT_API_URL": str(PREFECT_API_URL.value()), "BABELBENCH_COMPUTE": "inline", "DO_NOT_TRACK": "1",
                  PAUSED_ENV: str(tmp_path / "paused")} | extra


def _start(home: Path, env: dict[str, str], args: list[str], module: str = "flows.cli") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", module, "--home", str(home), *args], env=env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=child_dies_with_us())


def _run(home: Path, env: dict[str, str], args: list[str]) -> str:
    """Run a CLI command to completion; it must succeed."""
    process = _start(home, env, args)
    out, _ = process.communicate(timeout=600)
    assert process.returncode == 0, f"babelbench {' '.join(args)} exited {process.returncode}:\n{out[-4000:]}"
    return out


def _kill(process: subprocess.Popen[str]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL


def _kill_at(home: Path, env: dict[str, str], args: list[str], pause: str) -> None:
    """Run a CLI command until it stops at ``pause`` (inside a stage), then SIGKILL it."""
    paused = Path(env[PAUSED_ENV])
    paused.unlink(missing_ok=True)
    process = _start(home, env | {PAUSE_ENV: pause}, args, module="tests.support.crash_entry")
    deadline = time.monotonic() + 300
    while not paused.exists():
        if process.poll() is not None:
            out, _ = process.communicate()
            pytest.fail(f"babelbench {' '.join(args)} ended (exit {process.returncode}) before reaching {pause}:\n"
                        f"{out[-4000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"babelbench {' '.join(args)} did not reach {pause} in 300 s")
        time.sleep(0.1)
    assert paused.read_text().split()[1] == pause
    _kill(process)


def _assert_same_homes(killed: Path, clean: Path, queries: dict[str, list[str]] | None = None) -> None:
    assert lake_problems(clean) == []
    assert lake_problems(killed) == []  # no orphan shard, no temp file, nothing listed that is gone
    assert lake_files(killed) == lake_files(clean)
    tables, expected = table_snapshot(killed), table_snapshot(clean)
    assert {t: v for t, v in tables.items() if v != expected.get(t)} == {}
    assert tables == expected
    if queries is not None:
        indexes = index_snapshot(killed, queries)
        assert indexes["leftovers"] == []  # no half-written index folder
        assert indexes == index_snapshot(clean, queries)


def test_ingest_index_and_mining_killed_mid_stage_rerun_to_the_uninterrupted_result(prefect_api: None,
                                                                                   tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    source = mirror.root.as_uri()
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    corpus_flow(CorpusParams(langs=LANGS, source=source, kind="xml", home=str(clean), progress=False))
    clir_build_flow(ClirBuildParams(name="t", langs=LANGS, clir=SMALL, home=str(clean)))

    env = _env(tmp_path)
    ingest = ["corpus", "ingest", "--lang", ",".join(LANGS), "--source", source, "--kind", "xml"]
    build = ["clir", "build", "--name", "t", "--langs", ",".join(LANGS), "--top-k", str(SMALL.top_k),
             "--min-documents", str(SMALL.min_documents)]
    # ingest: de's multistream dump is parsed into shards, killed before the catalog switches to them
    _kill_at(killed, env, ingest, "register:documents_raw:de")
    with Warehouse(killed, read_only=True) as wh:  # the kill did land mid-stage: de's documents are not there yet
        assert wh.query("SELECT count(*) FROM documents_raw WHERE lang = 'de'") == [(0,)]
    _run(killed, env, ingest)
    # index build: de's index half written; then mining: de's hits written, not registered
    _kill_at(killed, env, build, "index:de")
    _kill_at(killed, env, build, "register:retrieval_hits:de")
    _run(killed, env, build)

    assert crashed_runs(killed) == ["corpus", "clir-build", "clir-build"]
    _assert_same_homes(killed, clean, QUERIES)


# -- an LLM stage -------------------------------------------------------------------------------------------------
ITEMS = {f"i{n}": (lang_of_source, fact) for n, (lang_of_source, fact) in enumerate(
    [("de", "1891"), ("en", "Maren Tolk"), ("fr", "Lyon"), ("de", "Elbe"), ("en", "42"), ("fr", "Rouen")])}
EVAL_LANGS = ("de", "en", "fr")
FACTS = {fact for _, fact in ITEMS.values()}


def _question(item: str, lang: str) -> str:
    return f"[{lang}] What is the fact number {item[1:]} about?"


def _eval_home(home: Path, server: FakeLLMServer) -> Path:
    entries = [{"name": name, "backend": "openai", "model": f"{name}-model", "base_url": server.base_url,
                "mode": "chat", "max_concurrency": 2, "timeout": 60} for name in ("good", "judge")]
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": entries}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('e', 'eclektic', ['de', 'en', 'fr'], 'g', '{}', now())")
        for item, (source, fact) in ITEMS.items():
            for lang in EVAL_LANGS:
                cur.execute("INSERT INTO instances VALUES ('e', ?, ?, 'eclektic', 'closed_book', ?, ?, ?, ?, NULL, ?,"
                            " '[]', 0, 'fp', NULL, NULL, NULL)",
                            [f"{item}:closed_book:{lang}", item, lang, _question(item, lang), fact, source,
                             f"It is {fact}."])
    return home


class _Model:
    """The fake endpoint's replies: the fact for a question (wrong for one item in French), the judge's verdict.

    ``gate(n)`` answers the next ``n`` requests and holds every later one unanswered until ``release()``: the
    process is then surely in the middle of its model calls, with exactly ``answered`` returned to it.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.left: int | None = None
        self.released = threading.Event()
        self.answered: list[str] = []
        self.held: list[str] = []

    def gate(self, answers: int) -> None:
        self.left = answers

    def release(self) -> None:
        with self.lock:
            self.left = None
        self.released.set()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            hold = self.left is not None and self.left <= 0
            if hold:
                self.held.append(prompt)
            else:
                if self.left is not None:
                    self.left -= 1
                self.answered.append(prompt)
        if hold:
            self.released.wait(300)
            return "too late: the client is gone"
        if "You check answers against a reference text." in prompt:
            answer = prompt.rsplit("\nAnswer:", 1)[1].strip()
            return f"<supported>{'yes' if answer in FACTS else 'no'}</supported>"
        for item, (_, fact) in ITEMS.items():
            for lang in EVAL_LANGS:
                if _question(item, lang) in prompt:
                    return "Paris" if (item, lang) == ("i2", "fr") else fact
        return "I do not know."


def _request_key(body: dict) -> str:
    return json.dumps(body, sort_keys=True)


def test_an_evaluation_killed_mid_inference_reruns_to_the_same_tables_and_pays_no_call_twice(
        prefect_api: None, tmp_path: Path) -> None:
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    answers = 5
    model = _Model()
    # one endpoint for both homes: the endpoint is part of what an inference cell's fingerprint covers
    with FakeLLMServer(delay=0.2, lifetime=600) as server:
        server.answer("", model)
        evaluate_flow(EvaluateParams(benchmark="e", models=["good"], judges=["judge"],
                                     home=str(_eval_home(clean, server))))
        uninterrupted = server.calls
        _eval_home(killed, server)
        env = _env(tmp_path)
        command = ["eval", "--benchmark", "e", "--models", "good", "--judges", "judge"]

        model.answered.clear()
        model.gate(answers)
        process = _start(killed, env, command)

        def stored() -> int:
            with Warehouse(killed, read_only=True) as wh:
                return wh.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok'")

        deadline = time.monotonic() + 300
        # mid-stage: a request is held unanswered, and every answered one is in the call cache
        while not (model.held and stored() == answers):
            assert process.poll() is None, f"the evaluation ended before the kill:\n{process.communicate()[0][-4000:]}"
            assert time.monotonic() < deadline, f"never mid-stage: held {len(model.held)}, stored {stored()}"
            time.sleep(0.2)
        _kill(process)
        before_kill = server.calls[len(uninterrupted):]
        answered_before_kill = set(model.answered)
        model.release()
        with Warehouse(killed, read_only=True) as wh:
            assert wh.scalar("SELECT count(*) FROM responses") == 0  # the kill did land inside inference

        _run(killed, env, command)
        rerun = server.calls[len(uninterrupted) + len(before_kill):]

    answered_keys = {_request_key(c.body) for c in before_kill if prompt_of(c.body) in answered_before_kill}
    assert len(answered_before_kill) == len(answered_keys) == answers
    again = [prompt_of(c.body)[:80] for c in rerun if _request_key(c.body) in answered_keys]
    assert again == []  # a call that returned before the kill is not paid again
    asked = Counter(_request_key(c.body) for c in rerun)
    assert [key for key, n in asked.items() if n > 1] == []
    # what the uninterrupted run asked was answered exactly once over the killed run and its rerun; the
    # requests held unanswered at the kill were never answered, so never paid
    answered = asked + Counter(answered_keys)
    assert answered == Counter(_request_key(c.body) for c in uninterrupted)
    assert crashed_runs(killed) == ["evaluate"]
    _assert_same_homes(killed, clean)
