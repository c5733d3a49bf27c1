"""prefect.yaml against a real `prefect server` on loopback: register, inspect, run through a worker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tasks.processes import child_dies_with_us, free_loopback_port, stop_process
from tasks.warehouse.db import Warehouse
from tests.conftest import TEST_DATA
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")
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


def _api(env: dict[str, str], call: Callable[[Any], Awaitable[T]]) -> T:
    """``call(client)`` with a Prefect client of the server in ``env``."""
    async def run() -> T:
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
            async with get_client() as client:
                return await call(client)

    return asyncio.run(run())


def _read_deployment(env: dict[str, str], name: str = "corpus/corpus-monthly") -> Any:
    return _api(env, lambda client: client.read_deployment_by_name(name))


def _automations(env: dict[str, str], deployment: Any) -> list[Any]:
    """The automations a deployment's triggers made (they are owned by the deployment resource)."""
    return _api(env, lambda client: client.read_resource_related_automations(f"prefect.deployment.{deployment.id}"))


def _flow_runs_of(env: dict[str, str], deployment: Any) -> list[Any]:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    return _api(env, lambda client: client.read_flow_runs(
        deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))))


def _delete_flow_runs(env: dict[str, str], runs: list[Any]) -> None:
    """Remove runs an automation made, so the worker of a later test does not pick them up."""
    async def delete(client: Any) -> None:
        for run in runs:
            await client.delete_flow_run(run.id)

    _api(env, delete)


def _emit(env: dict[str, str], event: str, resource: dict[str, str], related: list[dict[str, str]]) -> None:
    async def send() -> None:
        from prefect.events import Event
        from prefect.events.clients import PrefectEventsClient

        async with PrefectEventsClient(api_url=env["PREFECT_API_URL"]) as events:
            await events.emit(Event(event=event, resource=resource, related=related))

    asyncio.run(send())


CHAINED = {  # downstream deployment → (upstream deployment whose completed run starts it, automation name)
    "clir-build/clir-build-monthly": ("corpus/corpus-monthly", "clir-build-after-corpus"),
    "clir-eval/clir-eval": ("clir-build/clir-build-monthly", "clir-eval-after-build"),
    "qa-build/qa-build-monthly": ("corpus/corpus-monthly", "qa-build-after-corpus"),  # live: true, the month's window
    "instances/instances-monthly": ("qa-build/qa-build-monthly", "instances-after-qa-build"),
}


def test_the_screenshot_walk_waits_for_as_many_deployments_as_the_server_registered(registered: dict[str, str]) -> None:
    """The walk's deployments page waits for "N Deployments": N must be what `make deploy` registers, so that a
    deployment added to prefect.yaml does not leave the walk waiting for a stale number."""
    from deployments.screenshots import chained_automations, deployment_count

    on_server = _api(registered, lambda client: client.read_deployments())
    assert len(on_server) >= 10  # the shipped prefect.yaml's on-demand and chained deployments
    assert deployment_count() == len(on_server)
    # and it pauses every rebuild chained after the corpus build it runs, which would start them
    assert sorted(chained_automations()) == sorted(name for _, name in CHAINED.values())


def test_clir_deployments_are_registered(registered: dict[str, str]) -> None:
    build = _read_deployment(registered, "clir-build/clir-build-monthly")
    evaluate = _read_deployment(registered, "clir-eval/clir-eval")
    assert (build.entrypoint, evaluate.entrypoint) == ("flows/clir.py:clir_build_flow", "flows/clir.py:clir_eval_flow")
    assert build.schedules == [] and evaluate.schedules == []  # chained by triggers, not by cron offsets


@pytest.mark.parametrize("name", sorted(CHAINED))
def test_rebuilds_after_the_dump_refresh_are_chained_by_triggers_on_the_upstream_completion(
        registered: dict[str, str], name: str) -> None:
    from prefect.events.actions import RunDeployment

    upstream_name, automation_name = CHAINED[name]
    deployment, upstream = _read_deployment(registered, name), _read_deployment(registered, upstream_name)
    [automation] = _automations(registered, deployment)
    trigger = automation.trigger
    assert automation.name == automation_name and automation.enabled
    assert trigger.expect == {"prefect.flow-run.Completed"} and trigger.posture == "Reactive"
    assert trigger.match_related.model_dump() == {"prefect.resource.role": "deployment",
                                                  "prefect.resource.name": upstream_name.split("/")[1]}
    [action] = automation.actions
    assert isinstance(action, RunDeployment) and action.deployment_id == deployment.id
    assert action.parameters == deployment.parameters  # the rebuild's own parameters, passed on

    # a completed run of the upstream deployment (its event, as the server emits it) starts the downstream one
    flow_run_id = uuid.uuid4()
    _emit(registered, "prefect.flow-run.Completed",
          {"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.name": "upstream-run",
           "prefect.state-type": "COMPLETED", "prefect.state-name": "Completed"},
          [{"prefect.resource.id": f"prefect.deployment.{upstream.id}", "prefect.resource.role": "deployment",
            "prefect.resource.name": upstream.name}])
    runs = wait_for(lambda: _flow_runs_of(registered, deployment), f"a {name} run started by the trigger")
    try:
        assert [run.parameters for run in runs] == [deployment.parameters]
    finally:
        _delete_flow_runs(registered, runs)


def test_the_import_form_offers_every_published_dataset_as_a_choice(registered: dict[str, str]) -> None:
    from tasks.imports.common import DATASETS

    schema = _read_deployment(registered, "import/import").parameter_openapi_schema
    form = schema["definitions"]["ImportParams"]["properties"]
    assert set(form["dataset"]["enum"]) == set(DATASETS)
    assert all(form[field].get("description") for field in ("dataset", "source", "name", "langs"))


def test_an_added_model_is_announced_and_its_evaluation_is_started_by_the_trigger(registered: dict[str, str],
                                                                                  tmp_path: Path) -> None:
    from prefect.events.actions import RunDeployment
    from prefect.events.filters import EventFilter, EventNameFilter

    evaluate = _read_deployment(registered, "evaluate/evaluate")
    [automation] = _automations(registered, evaluate)
    assert automation.name == "evaluate-on-new-model" and automation.enabled
    assert automation.trigger.expect == {"babelbench.model.added", "babelbench.model.updated"}
    [action] = automation.actions
    assert isinstance(action, RunDeployment) and action.deployment_id == evaluate.id
    assert action.parameters["params"]["models"] == "{{ [event.resource.name] }}"  # renders the list

    home = tmp_path / "models-home"
    env = registered | {"BABELBENCH_HOME": str(home)}
    env.pop("BABELBENCH_MODELS", None)
    added = subprocess.run([sys.executable, "-m", "flows.cli", "models", "add", "--name", "served", "--backend", "openai",
                            "--model", "m-1", "--base-url", "http://127.0.0.1:9/v1"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stdout + added.stderr
    assert "announced babelbench.model.added for 'served'" in added.stdout

    def events(name: str) -> list[Any]:
        return _api(registered, lambda client: client.read_events(
            filter=EventFilter(event=EventNameFilter(name=[name])), limit=50)).events  # the server allows 50

    [event] = wait_for(lambda: [e for e in events("babelbench.model.added") if e.resource.id == "babelbench.model.served"],
                        "the babelbench.model.added event")
    assert event.resource.name == "served" and event.payload["backend"] == "openai"

    # the trigger runs the evaluate deployment for that model, its name templated from the event
    runs = wait_for(lambda: [r for r in _flow_runs_of(registered, evaluate)
                              if r.parameters["params"]["models"] == ["served"]], "an evaluation of the added model")
    _delete_flow_runs(registered, runs)

    # an edit of the registry file by hand is announced by the next load of the registry
    registry = home / "models.yaml"
    registry.write_text(registry.read_text() + "- {name: edited, backend: openai, model: m-2}\n")
    listed = subprocess.run([sys.executable, "-m", "flows.cli", "models", "list"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "edited" in listed.stdout, listed.stdout + listed.stderr
    wait_for(lambda: [e for e in events("babelbench.model.added") if e.resource.id == "babelbench.model.edited"],
              "the event of the hand edit")
    runs = wait_for(lambda: [r for r in _flow_runs_of(registered, evaluate)
                              if r.parameters["params"]["models"] == ["edited"]], "an evaluation of the edited-in model")
    _delete_flow_runs(registered, runs)


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
    "import/import": ("flows/imports.py:import_flow", "ImportParams", {"dataset", "source", "name", "langs", "force"}),
    "publish/publish": ("flows/publish.py:publish_flow", "PublishParams", {"benchmark", "out", "repo"}),
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


def _pause_triggers(env: dict[str, str]) -> None:
    """Pause every automation: a completed run of a test would otherwise start the chained rebuilds."""
    async def pause(client: Any) -> None:
        for automation in await client.read_automations():
            await client.pause_automation(automation.id)

    _api(env, pause)


def _run_through_worker(env: dict[str, str], deployment: str, params: str) -> None:
    """Create a run of ``deployment`` with ``params`` (JSON) as the UI would, and let one worker run it."""
    created = subprocess.run([sys.executable, "-m", "prefect", "deployment", "run", deployment, "--params", params],
                             cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    worker = subprocess.run([sys.executable, "-m", "prefect", "worker", "start", "--pool", "babelbench", "--run-once"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]


def test_a_deployment_run_through_a_worker_fills_the_warehouse(registered: dict[str, str], tmp_path: Path) -> None:
    sample = TEST_DATA / "wikipedia-xml" / "ukwiki-excerpt.xml.xz"  # 21 articles and 13 redirects: 34 complete pages
    home = tmp_path / "deployed-home"
    _pause_triggers(registered)
    env = registered | {"BABELBENCH_REPO": str(REPO), "BABELBENCH_COMPUTE": "inline"}
    _run_through_worker(env, "corpus/corpus-monthly", '{"params": {"langs": ["uk"], "source": "%s", "kind": "xml",'
                        ' "max_docs": 25, "home": "%s", "progress": false}}' % (sample, home))
    with Warehouse(home) as wh:
        assert wh.scalar("SELECT count(*) FROM documents WHERE lang = 'uk'") == 25
        assert wh.query("SELECT flow, status FROM runs") == [("corpus", "completed")]

    # the UI's "rerun one stage": the rerun-stage deployment, through the worker, recomputes sitelinks only
    _run_through_worker(env, "rerun-stage/rerun-stage",
                        '{"params": {"stage": "sitelinks", "scope": "corpus", "home": "%s"}}' % home)
    with Warehouse(home) as wh:
        latest = wh.scalar("SELECT run_id FROM runs WHERE flow = 'corpus' ORDER BY started_at DESC LIMIT 1")
        cells = dict(wh.query("SELECT stage || ':' || cell, status FROM artifacts WHERE run_id = ?", [latest]))
    assert cells == {"download:uk": "cached", "documents:uk": "cached", "appearance:uk": "cached",
                     "sitelinks:uk": "computed"}


def test_a_backfill_deployment_run_through_a_worker_computes_only_the_new_language(registered: dict[str, str],
                                                                                  tmp_path: Path) -> None:
    from tasks.sample.mirror import build_sample_mirror

    mirror = build_sample_mirror(tmp_path / "mirror")
    home = tmp_path / "backfilled-home"
    _pause_triggers(registered)
    env = registered | {"BABELBENCH_REPO": str(REPO), "BABELBENCH_COMPUTE": "inline"}
    # a corpus and a collection in English and German, built against the same server
    built = subprocess.run([sys.executable, "-c", (
        "from flows.clir import ClirBuildParams, clir_build_flow\n"
        "from flows.corpus import CorpusParams, corpus_flow\n"
        "from tasks.pairing.config import ClirConfig\n"
        f"corpus_flow(CorpusParams(langs=['en', 'de'], source={mirror.root.as_uri()!r}, home={str(home)!r},"
        " progress=False))\n"
        f"clir_build_flow(ClirBuildParams(name='c', langs=['en', 'de'], home={str(home)!r},"
        " clir=ClirConfig(top_k=20, min_documents=10)))\n")], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    with Warehouse(home) as wh:
        before = {run for (run,) in wh.query("SELECT run_id FROM runs")}

    _run_through_worker(env, "backfill/backfill", '{"params": {"langs": ["ja"], "home": "%s"}}' % home)
    with Warehouse(home) as wh:
        runs = dict(wh.query("SELECT run_id, flow FROM runs WHERE status = 'completed'"))
        cells = wh.query("SELECT stage, cell, status FROM artifacts WHERE list_contains(?, run_id)",
                         [sorted(set(runs) - before)])
        langs = wh.scalar("SELECT langs FROM clir_collections WHERE name = 'c'")
    assert sorted(runs[r] for r in set(runs) - before) == ["clir-build", "corpus"]  # the backfill's two runs
    computed = {(stage, cell) for stage, cell, status in cells if status == "computed"}
    assert computed == {("download", "ja"), ("documents", "ja"), ("appearance", "ja"), ("sitelinks", "ja"), ("index", "ja"),
                        ("retrieval", "ja"), ("qrels", "c:ja>en"), ("qrels", "c:ja>de"), ("qrels", "c:en>ja"),
                        ("qrels", "c:de>ja")}
    assert {status for stage, cell, status in cells if (stage, cell) not in computed} == {"cached"}
    assert {cell for _, cell, status in cells if status == "cached"} >= {"en", "de", "c:en>de", "c:de>en"}
    assert sorted(langs) == ["de", "en", "ja"]
