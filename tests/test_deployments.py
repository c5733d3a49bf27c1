"""prefect.yaml against a real `prefect server` on loopback: register, inspect, run through a worker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tasks.processes import child_dies_with_us, free_loopback_port, stop_process
from tasks.warehouse.db import Warehouse
from tests.conftest import shared_data

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real Prefect server process on a free loopback port, with its own SQLite database."""
    port = free_loopback_port()
    prefect_home = tmp_path_factory.mktemp("prefect-server")
    env = os.environ | {
        "PREFECT_HOME": str(prefect_home), "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_UI_ENABLED": "false",
    }
    log = (prefect_home / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=child_dies_with_us())
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"prefect server exited: {(prefect_home / 'server.log').read_text()[-2000:]}")
            time.sleep(1)
        else:
            pytest.fail("prefect server did not become healthy within 120 s")
        yield env
    finally:
        stop_process(proc, timeout=30)
        log.close()


@pytest.fixture(scope="module")
def registered(server: dict[str, str]) -> dict[str, str]:
    result = subprocess.run([sys.executable, "-m", "deployments.register"], cwd=REPO, env=server,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return server


def _read_deployment(env: dict[str, str], name: str = "corpus/corpus-monthly") -> object:
    async def read() -> object:
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
            async with get_client() as client:
                return await client.read_deployment_by_name(name)

    return asyncio.run(read())


def test_clir_deployments_are_registered(registered: dict[str, str]) -> None:
    build = _read_deployment(registered, "clir-build/clir-build-monthly")
    evaluate = _read_deployment(registered, "clir-eval/clir-eval")
    assert (build.entrypoint, evaluate.entrypoint) == ("flows/clir.py:clir_build_flow", "flows/clir.py:clir_eval_flow")
    assert [s.active for s in build.schedules] == [False] and evaluate.schedules == []


ON_DEMAND = {  # deployment → (entrypoint, its parameter model, fields the form must offer)
    "qa-build/qa-build": ("flows/qa.py:qa_build_flow", "QaBuildParams", {"recipe", "langs", "generator", "budget"}),
    "translate/translate": ("flows/qa.py:translate_flow", "TranslateParams", {"benchmark", "to", "translator"}),
    "instances/instances": ("flows/qa.py:instances_flow", "InstancesParams", {"benchmark", "instances"}),
    "evaluate/evaluate": ("flows/evaluate.py:evaluate_flow", "EvaluateParams", {"benchmark", "models", "judges",
                                                                               "budget", "force"}),
    "features/features": ("flows/features.py:features_flow", "FeaturesParams", {"benchmark", "features", "grader"}),
    "arena/arena": ("flows/arena.py:arena_flow", "ArenaParams", {"benchmark", "models", "judge", "ties", "budget"}),
    "report/report": ("flows/report.py:report_flow", "ReportParams", {"benchmark", "out"}),
    "rerun-stage/rerun-stage": ("flows/rerun.py:rerun_stage_flow", "RerunParams", {"stage", "scope", "langs"}),
    "backfill/backfill": ("flows/backfill.py:backfill_flow", "BackfillParams", {"langs"}),
}


@pytest.mark.parametrize("name", sorted(ON_DEMAND))
def test_every_flow_is_deployed_on_demand_with_its_parameter_form(registered: dict[str, str], name: str) -> None:
    entrypoint, model, fields = ON_DEMAND[name]
    deployment = _read_deployment(registered, name)
    assert deployment.entrypoint == entrypoint and deployment.schedules == []
    assert fields <= set(deployment.parameter_openapi_schema["definitions"][model]["properties"])


def test_the_rerun_stage_form_offers_every_stage_as_a_choice(registered: dict[str, str]) -> None:
    from flows.rerun import STAGE_OWNER

    schema = _read_deployment(registered, "rerun-stage/rerun-stage").parameter_openapi_schema
    assert set(schema["definitions"]["RerunParams"]["properties"]["stage"]["enum"]) == set(STAGE_OWNER)


def test_corpus_deployment_is_registered_with_typed_parameters_and_an_inactive_monthly_schedule(registered: dict[str, str]) -> None:
    deployment = _read_deployment(registered)
    assert deployment.entrypoint == "flows/corpus.py:corpus_flow"
    assert deployment.work_pool_name == "babelbench"
    schema = deployment.parameter_openapi_schema
    params_ref = schema["properties"]["params"]
    corpus_params = schema["definitions"]["CorpusParams"] if "$ref" in str(params_ref) else params_ref
    assert {"langs", "source", "date", "kind", "max_docs", "sitelinks", "force"} <= set(corpus_params["properties"])
    assert "langs" in corpus_params["required"]
    assert deployment.parameters["params"]["langs"] == ["en", "de", "fr", "ja", "zh"]
    [schedule] = deployment.schedules
    assert schedule.active is False
    assert schedule.schedule.cron == "0 4 3 * *"


def test_a_deployment_run_through_a_worker_fills_the_warehouse(registered: dict[str, str], tmp_path: Path) -> None:
    sample = shared_data("wikipedia-xml", "ukwiki-truncated-100k.xml.xz")
    home = tmp_path / "deployed-home"
    env = registered | {"BABELBENCH_REPO": str(REPO), "BABELBENCH_COMPUTE": "inline"}
    params = ('{"params": {"langs": ["uk"], "source": "%s", "kind": "xml", "max_docs": 25, "home": "%s", "progress": false}}'
              % (sample, home))
    created = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", "corpus/corpus-monthly",
                              "--params", params], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    worker = subprocess.run([sys.executable, "-m", "prefect", "worker", "start", "--pool", "babelbench", "--run-once"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
    with Warehouse(home) as wh:
        assert wh.scalar("SELECT count(*) FROM documents WHERE lang = 'uk'") == 25
        assert wh.query("SELECT flow, status FROM runs") == [("corpus", "completed")]

    # the UI's "rerun one stage": the rerun-stage deployment, through the worker, recomputes sitelinks only
    rerun = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", "rerun-stage/rerun-stage", "--params",
                            '{"params": {"stage": "sitelinks", "scope": "corpus", "home": "%s"}}' % home],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    worker = subprocess.run([sys.executable, "-m", "prefect", "worker", "start", "--pool", "babelbench", "--run-once"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
    with Warehouse(home) as wh:
        latest = wh.scalar("SELECT run_id FROM runs WHERE flow = 'corpus' ORDER BY started_at DESC LIMIT 1")
        cells = dict(wh.query("SELECT stage || ':' || cell, status FROM artifacts WHERE run_id = ?", [latest]))
    assert cells == {"download:uk": "cached", "documents:uk": "cached", "sitelinks:uk": "computed"}
