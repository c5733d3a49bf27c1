"""Screenshots of the Prefect UI for ``docs/operations.md``, taken in headless Chromium.

``python -m deployments.screenshots --out docs/img`` starts a real Prefect server and worker in a scratch
directory, runs a corpus build, a stage rerun and a backfill on the bundled sample, adds a model, and
photographs each page once it shows the text it should (else ``NAME.failed.png`` and exit 1).  Nothing here
is needed to run babelbench; it documents it.

``--stack`` walks the stack ``make stack`` runs instead (:mod:`deployments.stack`): the deployments registered on its
Prefect server, the corpus build, then the rerun and the backfill at once on two of its workers, with the warehouse
on its DuckLake, and the new model's evaluation.

See ``docs/development.md``, "The Prefect UI pictures".
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from deployments.register import WORK_POOL
from deployments.services import wait_http
from tasks.processes import child_dies_with_us, free_loopback_port, stop_process

REPO = Path(__file__).resolve().parents[1]
FINAL_STATES = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
#: A fresh headless Chromium with no service reaching the network; /dev/shm unused (a container's is often tiny).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-default-apps", "--hide-scrollbars", "--window-size=1400,900")


def _deployments(path: Path) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text(encoding="utf-8")).get("deployments") or []


def deployment_count(path: Path = REPO / "prefect.yaml") -> int:
    """How many deployments ``prefect.yaml`` registers: the deployments page must show that many, and the count
    is read rather than written here so that adding a deployment does not make the walk wait for a stale number."""
    return len(_deployments(path))


def chained_automations(path: Path = REPO / "prefect.yaml") -> tuple[str, ...]:
    """The automations of ``prefect.yaml`` that a completed flow run sets off (the rebuilds chained after the monthly
    corpus): paused while the walk runs its corpus build, which would otherwise start each of them."""
    return tuple(trigger["name"] for deployment in _deployments(path) for trigger in deployment.get("triggers") or []
                 if "prefect.flow-run.Completed" in trigger.get("expect", []))


def log(message: str) -> None:
    print(f"[screenshots] {message}", flush=True)


# --- the Prefect side --------------------------------------------------------


@dataclass
class Prefect:
    """A Prefect server of our own, reached over its REST API."""

    url: str  # http://127.0.0.1:PORT
    env: dict[str, str]

    @property
    def api(self) -> str:
        return f"{self.url}/api"

    def call(self, method: str, path: str, body: Any = None, attempts: int = 8) -> Any:
        """One API call; a busy server (5xx: its SQLite database locked under load, or no answer) is asked again."""
        for attempt in range(1, attempts + 1):
            try:
                reply = httpx.request(method, f"{self.api}{path}", json=body, timeout=60)
                if reply.status_code < 500:
                    reply.raise_for_status()
                    return reply.json() if reply.content else None
                problem = f"HTTP {reply.status_code}"
            except httpx.TransportError as exc:
                problem = repr(exc)
            if attempt == attempts:
                raise RuntimeError(f"{method} {path}: {problem} after {attempts} attempts")
            time.sleep(2 * attempt)
        raise AssertionError("unreachable")

    def deployment(self, name: str) -> dict[str, Any]:
        [found] = self.call("POST", "/deployments/filter", {"deployments": {"name": {"any_": [name]}}})
        return found

    def run_deployment(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        deployment = self.deployment(name)
        return self.call("POST", f"/deployments/{deployment['id']}/create_flow_run", {"parameters": {"params": params}})

    def wait_final(self, flow_run: dict[str, Any], timeout: float) -> dict[str, Any]:
        current = self._wait(flow_run, FINAL_STATES, timeout, "did not finish")
        log(f"flow run {current['name']} of {flow_run['parameters']}: {current['state_name']}")
        return current

    def wait_taken(self, flow_run: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Wait until a worker has taken ``flow_run`` (Pending: the worker holds one of its slots from then on)."""
        return self._wait(flow_run, FINAL_STATES | {"PENDING", "RUNNING"}, timeout, "was not taken by a worker")

    def _wait(self, flow_run: dict[str, Any], states: set[str], timeout: float, failing: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            current = self.call("GET", f"/flow_runs/{flow_run['id']}")
            if current["state_type"] in states:
                return current
            time.sleep(1)
        raise TimeoutError(f"flow run {flow_run['id']} {failing} within {timeout:.0f} s")

    def set_automations(self, names: tuple[str, ...], enabled: bool) -> None:
        for automation in self.call("POST", "/automations/filter", {}):
            if automation["name"] in names:
                self.call("PATCH", f"/automations/{automation['id']}", {"enabled": enabled})

    def subflow_artifact(self, parent: dict[str, Any], key: str) -> dict[str, Any]:
        """The markdown artifact ``key`` of a subflow run of flow run ``parent``."""
        children = {run["id"] for run in self.call("POST", "/flow_runs/filter", {
            "flow_runs": {"parent_flow_run_id": {"any_": [parent["id"]]}}})}
        [found] = [artifact for artifact in self.markdown_artifacts(key) if artifact["flow_run_id"] in children]
        return found

    def set_pool_paused(self, paused: bool) -> None:
        """Pause the work pool (its workers take no flow run) or resume it."""
        self.call("PATCH", f"/work_pools/{WORK_POOL}", {"is_paused": paused})

    def markdown_artifacts(self, key: str) -> list[dict[str, Any]]:
        """The markdown artifacts with ``key``, oldest first."""
        found = self.call("POST", "/artifacts/filter", {"artifacts": {"key": {"any_": [key]},
                                                                      "type": {"any_": ["markdown"]}},
                                                        "sort": "CREATED_DESC"})
        if not found:
            raise RuntimeError(f"no markdown artifact with key {key!r}")
        return found[::-1]


@contextmanager
def prefect_server(scratch: Path, timeout: float) -> Iterator[Prefect]:
    """``prefect server start`` with the UI on a free loopback port; stopped on exit."""
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    home = scratch / "babelbench-home"
    env = os.environ | {
        "PREFECT_HOME": str(scratch / "prefect-home"), "PREFECT_API_URL": f"{url}/api", "PREFECT_UI_ENABLED": "true",
        "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_WORKER_QUERY_SECONDS": "3",
        "BABELBENCH_HOME": str(home), "BABELBENCH_REPO": str(REPO), "BABELBENCH_COMPUTE": "inline",
    }
    env.pop("BABELBENCH_MODELS", None)
    log_file = (scratch / "server.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                               str(port)], cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                              preexec_fn=child_dies_with_us())
    try:
        wait_http(f"{url}/api/health", "the Prefect server", lambda: server.poll() is None, timeout)
        wait_http(url, "the Prefect UI", lambda: server.poll() is None, timeout)
        log(f"Prefect server and UI at {url}")
        yield Prefect(url, env)
    finally:
        stop_process(server, timeout=30)
        log_file.close()


@contextmanager
def worker(prefect: Prefect, scratch: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``prefect worker start --pool babelbench`` for as long as the block runs."""
    log_file = (scratch / "worker.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", WORK_POOL], cwd=REPO,
                               env=prefect.env, stdout=log_file, stderr=subprocess.STDOUT,
                               preexec_fn=child_dies_with_us())
    try:
        yield process
    finally:
        stop_process(process, timeout=60)
        log_file.close()


@dataclass
class Demo:
    """What the demo made that the screenshots show, and its flow runs (final states)."""

    rerun_deployment: dict[str, Any]
    rerun_summary: dict[str, Any]  # the summary artifact of the corpus run the stage rerun made
    backfill_artifact: dict[str, Any]
    runs: dict[str, dict[str, Any]]  # corpus, rerun, backfill


def register(prefect: Prefect, timeout: float) -> None:
    """``deployments.register`` (the work pool and every deployment); the chained rebuilds' automations paused."""
    registered = subprocess.run([sys.executable, "-m", "deployments.register"], cwd=REPO, env=prefect.env,
                                capture_output=True, text=True, timeout=timeout)
    if registered.returncode != 0:
        raise RuntimeError(f"deployments.register failed:\n{registered.stdout}\n{registered.stderr}")
    log("deployments registered")
    prefect.set_automations(chained_automations(), enabled=False)


def run_demo(prefect: Prefect, scratch: Path, timeout: float, *, at_once: bool = False) -> Demo:
    """Run corpus, rerun-stage and backfill on the sample through the workers (which must be running); ``at_once``:
    the backfill, and the rerun submitted once a worker holds it, so the other worker runs the rerun meanwhile (a
    stack's workers each run one flow run at a time)."""
    from tasks.sample.mirror import build_sample_mirror

    home = prefect.env["BABELBENCH_HOME"]
    mirror = build_sample_mirror(scratch / "sample-mirror")
    first, rest = list(mirror.langs[:-1]), list(mirror.langs[-1:])
    corpus = prefect.wait_final(prefect.run_deployment("corpus-monthly", {
        "langs": first, "source": mirror.root.as_uri(), "kind": "cirrus", "sitelinks": "auto", "home": home,
        "progress": False}), timeout)
    rerun_params, backfill_params = {"stage": "sitelinks", "scope": "corpus", "home": home}, {"langs": rest, "home": home}
    if at_once:  # the long backfill first; while it holds one worker, only the other can take the rerun
        backfill = prefect.wait_taken(prefect.run_deployment("backfill", backfill_params), timeout)
        rerun = prefect.wait_final(prefect.run_deployment("rerun-stage", rerun_params), timeout)
        backfill = prefect.wait_final(backfill, timeout)
    else:
        rerun = prefect.wait_final(prefect.run_deployment("rerun-stage", rerun_params), timeout)
        backfill = prefect.wait_final(prefect.run_deployment("backfill", backfill_params), timeout)
    prefect.set_automations(chained_automations(), enabled=True)
    return Demo(prefect.deployment("rerun-stage"), prefect.subflow_artifact(rerun, "babelbench-corpus-summary"),
                prefect.markdown_artifacts("backfill")[-1], {"corpus": corpus, "rerun": rerun, "backfill": backfill})


def add_model(prefect: Prefect, timeout: float) -> list[dict[str, Any]]:
    """``babelbench models add``; wait until the evaluate-on-new-model automation has scheduled its evaluation, and
    return its flow runs (none when it did not within 120 s)."""
    added = subprocess.run([sys.executable, "-m", "flows.cli", "models", "add", "--name", "qwen", "--backend", "openai",
                            "--model", "Qwen/Qwen2.5-7B-Instruct", "--base-url", "http://127.0.0.1:8000/v1"],
                           cwd=REPO, env=prefect.env, capture_output=True, text=True, timeout=timeout)
    log(f"models add: {added.stdout.strip() or added.stderr.strip()}")
    evaluate = prefect.deployment("evaluate")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        scheduled = prefect.call("POST", "/flow_runs/filter", {"deployments": {"id": {"any_": [evaluate["id"]]}}})
        if scheduled:
            log("the evaluate-on-new-model automation scheduled an evaluate run")
            return scheduled
        time.sleep(2)
    log("no evaluate run was scheduled within 120 s")
    return []


# --- the browser side --------------------------------------------------------


class Browser:
    """Headless Chromium with a fresh profile, driven over the DevTools protocol (one page)."""

    def __init__(self, scratch: Path, chromium: str) -> None:
        profile = scratch / "chromium-profile"
        profile.mkdir()
        self._log = (scratch / "chromium.log").open("wb")
        self.process = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                         "--remote-debugging-port=0", "about:blank"],
                                        stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=child_dies_with_us())
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"chromium did not start (see {scratch / 'chromium.log'})")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        [page] = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json() if t["type"] == "page"]
        from websockets.sync.client import connect

        self._ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self._next = 0
        self.send("Page.enable")
        self.send("Runtime.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        self._ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=120))
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def open(self, url: str, expect: tuple[str, ...], timeout: float) -> None:
        """Navigate and wait until the page's text holds every string of ``expect`` (the SPA has rendered)."""
        self.send("Page.navigate", url=url)
        self.wait_text(expect, timeout)

    def wait_text(self, expect: tuple[str, ...], timeout: float, nudge: Callable[[], None] | None = None,
                  every: float = 4.0) -> None:
        """Wait until the page's text holds every string of ``expect``; ``nudge`` (clicks that reveal the text) is
        retried every ``every`` seconds, since a click made before the app has rendered its target is lost."""
        deadline = time.monotonic() + timeout
        nudged = -math.inf
        text = ""
        while time.monotonic() < deadline:
            if nudge is not None and time.monotonic() - nudged >= every:
                nudge()
                nudged = time.monotonic()
                time.sleep(1)
            text = self.evaluate("document.body ? document.body.innerText : ''") or ""
            if all(s in text for s in expect):
                time.sleep(2)  # let charts and late requests settle
                return
            time.sleep(1)
        # the page's start names where it is; drawers and panes render last, so its end shows what they hold
        shown = repr(text) if len(text) <= 1200 else f"{text[:400]!r} … {text[-800:]!r}"
        raise TimeoutError(f"the page did not show {expect} within {timeout:.0f} s; it shows: {shown}")

    def click_text(self, selector: str, text: str) -> bool:
        """A real mouse click on the first element matching ``selector`` whose text is ``text``; False if none."""
        where = self.evaluate(f"""(() => {{
          const el = [...document.querySelectorAll({json.dumps(selector)})]
            .find(e => e.innerText && e.innerText.trim() === {json.dumps(text)});
          if (!el) return null;
          el.scrollIntoView({{block: 'center'}});
          const r = el.getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2];
        }})()""")
        if not where:
            return False
        x, y = where
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        return True

    def screenshot(self, path: Path, height: int = 900, max_bytes: int = 300_000) -> None:
        """A PNG of the viewport (1400 × ``height``), quantised to 256 colours if it is over ``max_bytes``."""
        from PIL import Image

        self.send("Emulation.setDeviceMetricsOverride", width=1400, height=height, deviceScaleFactor=1, mobile=False)
        time.sleep(1)
        raw = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        image = Image.open(io.BytesIO(raw)).convert("RGB")
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", optimize=True)
        if buffer.tell() > max_bytes:
            buffer = io.BytesIO()
            image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, format="PNG", optimize=True)
        path.write_bytes(buffer.getvalue())
        log(f"wrote {path} ({buffer.tell() // 1024} KB)")

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            stop_process(self.process, timeout=10)
            self._log.close()


class Shots:
    """Screenshots of one server's pages into ``out``; a page that never shows its text is saved as ``*.failed.png``."""

    def __init__(self, browser: Browser, base_url: str, out: Path, timeout: float) -> None:
        self.browser, self.base_url, self.out, self.timeout = browser, base_url, out, timeout
        self.written: list[Path] = []
        self.failed: list[str] = []
        out.mkdir(parents=True, exist_ok=True)

    def take(self, name: str, path: str, expect: tuple[str, ...], height: int = 900,
             then: Callable[[], None] | None = None) -> None:
        self.browser.send("Emulation.setDeviceMetricsOverride", width=1400, height=height, deviceScaleFactor=1,
                          mobile=False)
        try:
            self.browser.open(self.base_url + path, expect, self.timeout)
            if then is not None:
                then()
        except TimeoutError as exc:
            log(f"{self.base_url + path}: {exc}")
            self.failed.append(name)
            self.browser.screenshot(self.out / f"{name}.failed.png", height=height)
            return
        target = self.out / f"{name}.png"
        self.browser.screenshot(target, height=height)
        self.written.append(target)

    def report(self) -> int:
        """Print the pictures written; the exit status: 1 when a page did not render."""
        for path in self.written:
            print(path)
        if self.failed:
            log(f"pages that did not render: {', '.join(self.failed)}")
            return 1
        return 0


def screenshot_options(description: str, timeout: float, timeout_help: str) -> argparse.ArgumentParser:
    """The options every screenshot script takes (where the pictures go, the browser, how long to wait)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img", help="Folder for the PNG files.")
    parser.add_argument("--chromium", help="The Chromium executable.",
                        default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    parser.add_argument("--timeout", type=float, default=timeout, help=timeout_help)
    parser.add_argument("--page-timeout", type=float, default=90.0, help="Seconds to wait for a page to render.")
    parser.add_argument("--keep", action="store_true", help="Keep the scratch directory (logs) and say where it is.")
    return parser


@contextmanager
def scratch_folder(prefix: str, keep: bool) -> Iterator[Path]:
    """A scratch directory for the servers' stores and logs, removed afterwards unless ``keep``."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield scratch
    finally:
        if keep:
            log(f"scratch directory kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


# The stage field is a native <select>, whose opened list is drawn by the operating system, not the page (so no
# screenshot shows it): it is turned into a list box showing every choice, the default selected.
SHOW_STAGE_CHOICES = """
(() => {
  const select = [...document.querySelectorAll('select')]
    .find(s => [...s.options].some(o => o.value === 'arena-surrogate'));
  if (!select) return false;
  select.size = select.options.length;
  // the control is absolutely positioned over its wrapper, one line high: let it take its own height
  Object.assign(select.style, {position: 'static', inset: 'auto', height: 'auto', width: '100%', overflow: 'hidden'});
  return true;
})()
"""


def open_stage_enum(browser: Browser, timeout: float) -> None:
    """Show the run form's stage choices (every stage; ``scoring``, the default, selected)."""
    if not browser.evaluate(SHOW_STAGE_CHOICES):
        raise TimeoutError("the run form has no select offering the stages")
    time.sleep(1)


def open_artifacts_tab(browser: Browser, timeout: float) -> None:
    """Switch a flow run's page to its Artifacts tab."""
    def click_tab() -> None:
        if not browser.click_text(".p-tab, [role='tab'], button", "Artifacts"):
            raise TimeoutError("the flow run page has no Artifacts tab")

    browser.wait_text(("babelbench-corpus-summary",), timeout, nudge=click_tab)


def take_pages(browser: Browser, prefect: Prefect, demo: Demo, args: argparse.Namespace) -> Shots:
    """The pages of the deployments, the rerun and the backfill, and the automations (the flow runs page comes
    after the model is added)."""
    shots = Shots(browser, prefect.url, args.out.resolve(), args.page_timeout)
    shots.take("prefect-deployments", "/deployments", (f"{deployment_count()} Deployments", "corpus-monthly", "backfill"),
               height=960)
    shots.take("prefect-rerun-stage-form", f"/deployments/deployment/{demo.rerun_deployment['id']}/run",
               ("stage", "scope"), height=1400, then=lambda: open_stage_enum(browser, args.page_timeout))
    rerun_run = f"/runs/flow-run/{demo.rerun_summary['flow_run_id']}"
    shots.take("prefect-rerun-corpus-run", rerun_run, ("Cached(", "sitelinks[en]"))
    shots.take("prefect-rerun-run-artifacts", rerun_run, ("Artifacts",), height=1150,
               then=lambda: open_artifacts_tab(browser, args.page_timeout))
    shots.take("prefect-rerun-summary-artifact", f"/artifacts/artifact/{demo.rerun_summary['id']}",
               ("cache hits",), height=560)
    shots.take("prefect-backfill-artifact", f"/artifacts/artifact/{demo.backfill_artifact['id']}",
               ("Backfill",), height=420)
    shots.take("prefect-automations", "/automations", ("evaluate-on-new-model", "clir-build-after-corpus"), height=1180)
    return shots


def take_flow_runs(shots: Shots) -> int:
    """The flow runs page, the new model's evaluation Scheduled on it; the exit status of the walk."""
    shots.take("prefect-flow-runs", "/runs", ("backfill", "rerun-stage", "evaluate", "Scheduled"), height=1340)
    return shots.report()


def stack_prefect(stack: Any) -> Prefect:
    """The Prefect server of a running stack (:mod:`deployments.stack`), with the environment its clients use."""
    if "prefect-server" not in stack.running():
        raise RuntimeError(f"no stack runs in {stack.home}: start it with `make stack` (python -m deployments.stack up)")
    return Prefect(stack.prefect_api.removesuffix("/api"),
                   os.environ | stack.client_env() | {"BABELBENCH_REPO": str(REPO), "DO_NOT_TRACK": "1"})


def walk_stack(args: argparse.Namespace, scratch: Path) -> int:
    """The walk on the stack ``make stack`` started: its workers run the rerun and the backfill at once."""
    from deployments.stack import Stack

    prefect = stack_prefect(Stack.configured())
    register(prefect, args.timeout)
    demo = run_demo(prefect, scratch, args.timeout, at_once=True)
    browser = Browser(scratch, args.chromium)
    scheduled: list[dict[str, Any]] = []
    try:
        shots = take_pages(browser, prefect, demo, args)
        prefect.set_pool_paused(True)  # the workers leave the new model's evaluation Scheduled, for the picture
        scheduled = add_model(prefect, args.timeout)
        return take_flow_runs(shots)
    finally:
        browser.close()
        for run in scheduled:  # the sample has no benchmark it could evaluate
            prefect.call("DELETE", f"/flow_runs/{run['id']}")
        prefect.set_pool_paused(False)


def main(argv: list[str] | None = None) -> int:
    parser = screenshot_options(__doc__.split("\n", 1)[0], 900.0, "Seconds to wait for a flow run or a service.")
    parser.add_argument("--stack", action="store_true",
                        help="Walk the stack `make stack` runs (its Prefect server, workers and DuckLake warehouse)"
                             " instead of a server of its own; give it a throwaway home: the walk ingests the"
                             " bundled sample into its warehouse.")
    args = parser.parse_args(argv)
    with scratch_folder("babelbench-screenshots-", args.keep) as scratch:
        if args.stack:
            return walk_stack(args, scratch)
        with prefect_server(scratch, args.timeout) as prefect:
            register(prefect, args.timeout)  # before the worker, which would make the pool itself
            with worker(prefect, scratch):  # running while the pages are taken, so deployments show "Ready"
                demo = run_demo(prefect, scratch, args.timeout)
                browser = Browser(scratch, args.chromium)
                try:
                    shots = take_pages(browser, prefect, demo, args)
                except BaseException:
                    browser.close()
                    raise
            # without a worker, the evaluation the new model's event schedules stays visible as Scheduled
            add_model(prefect, args.timeout)
            try:
                return take_flow_runs(shots)
            finally:
                browser.close()


if __name__ == "__main__":
    sys.exit(main())
