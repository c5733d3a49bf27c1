"""Screenshots of what an evaluation leaves in MLflow, for ``docs/evaluation.md``, taken in headless Chromium.

``python -m deployments.mlflow_screenshots --out docs/img`` does, in a scratch
directory that it removes afterwards:

1. starts a real ``mlflow server`` on a free loopback port (a SQLite store and
   served artifacts in the scratch directory);
2. runs the bundled sample's evaluation against it (``MLFLOW_TRACKING_URI``),
   offline: the XRAG-format sample imported, the model-free systems
   ``oracle``, ``extractive`` and ``abstain`` evaluated and judged by the
   reference judge, then an arena between them — a few traces per language;
3. drives headless Chromium over the DevTools protocol
   (:class:`deployments.screenshots.Browser`) to the oracle's evaluation run's
   Traces tab (its traces with their assessments and expectations), one
   trace open on its assessments, the benchmark's evaluation dataset, the
   run's overview and the Evaluation runs view, and saves a PNG of each.

A page that never shows its text is saved as ``NAME.failed.png`` and the
command exits 1.  Nothing here is needed to run babelbench; it documents it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from deployments.screenshots import Browser, Shots, log, scratch_folder, screenshot_options
from deployments.services import wait_http
from tasks.processes import child_dies_with_us, free_loopback_port, stop_process

REPO = Path(__file__).resolve().parents[1]
SAMPLE = "xrag-sample"
SYSTEMS = ["oracle", "extractive", "abstain"]
JUDGE = "reference-judge"


@contextmanager
def mlflow_server(scratch: Path, timeout: float) -> Iterator[str]:
    """``mlflow server`` on a free loopback port with a SQLite store in ``scratch``; its URL; stopped on exit."""
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    log_file = (scratch / "mlflow-server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{scratch / 'mlflow.db'}",
         "--artifacts-destination", str(scratch / "mlartifacts")],
        cwd=REPO, env=os.environ | {"DO_NOT_TRACK": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}, stdout=log_file,
        stderr=subprocess.STDOUT, preexec_fn=child_dies_with_us())
    try:
        wait_http(f"{url}/health", "the MLflow server", lambda: server.poll() is None, timeout)
        log(f"MLflow server at {url}")
        yield url
    finally:
        stop_process(server, timeout=30)
        log_file.close()


@dataclass(frozen=True)
class SampleEvaluation:
    """What the sample evaluation made that the pictures show."""

    evaluate_experiment: str
    model_run: str  # the oracle's evaluation run
    trace: str  # one of its traces
    dataset: str  # the benchmark's evaluation dataset id


def evaluate_sample(home: Path, traces: str, systems: list[str] = SYSTEMS) -> None:
    """Import the bundled XRAG-format sample into ``home`` and run an evaluation and an arena of ``systems`` on it,
    judged by the reference judge, writing ``traces`` traces per language; MLflow is whatever
    ``MLFLOW_TRACKING_URI`` names."""
    from flows.arena import ArenaParams, arena_flow
    from flows.evaluate import EvaluateParams, evaluate_flow
    from tasks.arena import ArenaConfig
    from tasks.imports import import_dataset
    from tasks.mlflow_genai import TraceSample
    from tasks.sample import write_xrag_sample
    from tasks.warehouse import Warehouse

    home.mkdir(parents=True, exist_ok=True)
    with Warehouse(home) as wh:
        import_dataset(wh, "xrag", write_xrag_sample(home / "xrag-sample.jsonl"), SAMPLE, None)
    sample = TraceSample(traces=traces)
    evaluate_flow(EvaluateParams(benchmark=SAMPLE, models=systems, judges=[JUDGE], traces=sample, home=str(home)))
    arena_flow(ArenaParams(benchmark=SAMPLE, models=systems, judge=JUDGE, arena=ArenaConfig(queries_per_lang=4),
                           bootstrap=50, traces=sample, home=str(home)))


def what_to_show(url: str) -> SampleEvaluation:
    """The oracle's evaluation run, a trace of it with a judge's rationale, and the dataset it evaluated."""
    from mlflow import MlflowClient

    client = MlflowClient(url)
    experiment = client.get_experiment_by_name("babelbench-evaluate").experiment_id
    [run] = client.search_runs([experiment], filter_string=f"tags.`babelbench.model` = '{SYSTEMS[0]}'")
    traces = client.search_traces(locations=[experiment], run_id=run.info.run_id)
    [dataset] = [d for d in client.search_datasets(experiment_ids=[experiment])]
    return SampleEvaluation(experiment, run.info.run_id, traces[0].info.trace_id, dataset.dataset_id)


# The trace's assessments pane, and the judge's feedback in it unfolded: its source and rationale. The pane opens
# through its own toggle. The card is found by its name, since the pane's order of feedback logged in the same
# millisecond varies from run to run, and only a folded group is clicked, so a repeated nudge never folds it back.
# ``%s`` is the card's name.
SHOW_ASSESSMENTS = """
(() => {
  const pane = document.querySelector('[data-testid="assessments-pane"]');
  if (!pane) {
    const open = document.querySelector('[data-component-id="shared.model-trace-explorer.assessments-pane-toggle"]');
    if (open) open.click();
    return false;
  }
  const toggles = pane.querySelectorAll('[data-component-id="shared.model-trace-explorer.toggle-assessment-expanded"]');
  for (const toggle of toggles) {
    const group = toggle.parentElement.parentElement;  // the value's row, then the feedback under it once unfolded
    const card = group.parentElement;  // the assessment's name, then its values
    if (card.innerText.split('\\n', 1)[0].trim() !== %s) continue;
    card.scrollIntoView({block: 'center'});
    if (group.childElementCount === 1) toggle.click();
  }
  return true;
})()
"""
DISMISS = """
(() => {
  for (const b of document.querySelectorAll('button')) { if (b.innerText.trim() === 'Got it') b.click(); }
  const close = document.querySelector('[data-component-id="mlflow.assistant.chat_panel.close"]');
  if (close) close.click();
  return true;
})()
"""


def open_assessments(browser: Browser, timeout: float) -> None:
    """On an open trace, show its assessments with the judge's feedback unfolded (source and rationale): the pane
    opens, then the feedback in it unfolds, each once the drawer has rendered what is clicked."""

    from tasks.recipes.xrag import RECIPE  # the sample is XRAG's: its judge's kind names the feedback

    show = SHOW_ASSESSMENTS % json.dumps(RECIPE.judge)

    def nudge() -> None:
        browser.evaluate(DISMISS)  # the assistant's panel and feature tips cover the pane
        browser.evaluate(show)

    browser.wait_text((JUDGE, "Rationale"), timeout, nudge=nudge)


def main(argv: list[str] | None = None) -> int:
    args = screenshot_options(__doc__.split("\n", 1)[0], 300.0, "Seconds to wait for the MLflow server.").parse_args(argv)
    with scratch_folder("babelbench-mlflow-screenshots-", args.keep) as scratch:
        with mlflow_server(scratch, args.timeout) as url:
            os.environ["MLFLOW_TRACKING_URI"] = url
            os.environ["BABELBENCH_HOME"] = str(scratch / "home")
            # the flows run in this process, on Prefect's ephemeral API, which a busy machine starts slowly
            os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
            evaluate_sample(scratch / "home", traces="4")
            shown = what_to_show(url)
            browser = Browser(scratch, args.chromium)
            try:
                shots = Shots(browser, url, args.out.resolve(), args.page_timeout)
                base = f"/#/experiments/{shown.evaluate_experiment}"

                def tidy() -> None:
                    browser.evaluate(DISMISS)
                    time.sleep(1)

                def show_assessment_columns() -> None:  # the assistant's panel hides them until closed
                    browser.wait_text(("Assessments",), args.page_timeout, nudge=lambda: browser.evaluate(DISMISS))

                shots.take("mlflow-evaluation-run-traces", f"{base}/runs/{shown.model_run}/traces",
                           ("Trace ID", "Expected output"), height=760, then=show_assessment_columns)
                shots.take("mlflow-trace-assessments", f"{base}/traces?selectedEvaluationId={shown.trace}",
                           ("read answer",), then=lambda: open_assessments(browser, args.page_timeout))
                shots.take("mlflow-evaluation-dataset", f"{base}/datasets?selectedDatasetId={shown.dataset}",
                           (SAMPLE, "expected_response"), height=620, then=tidy)
                shots.take("mlflow-evaluation-run", f"{base}/runs/{shown.model_run}", ("Registered prompts",),
                           height=760, then=tidy)
                shots.take("mlflow-evaluation-runs", f"{base}/evaluation-runs", (f"{SAMPLE}@",), height=420,
                           then=tidy)
            finally:
                browser.close()
            return shots.report()


if __name__ == "__main__":
    sys.exit(main())
