"""How close evaluation gets to the endpoint's ceiling, how cheap a rerun is, and MKQA scoring speed.

* ``vs_endpoint``: the inference stage's requests/s against a loopback
  OpenAI-compatible server that answers each request after a fixed delay,
  with 16 requests in flight, divided by that server's ceiling
  (16 / delay) — what the stage's own overhead costs (goal ≥ 0.9);
* ``rerun_ratio``: an evaluation rerun with nothing changed ÷ its cold run,
  both through the Prefect flow (goal ≤ 0.05: every cell a cache hit, no
  request sent);
* ``vs_official``: MKQA official-mode scoring against the official script
  (``benchmarks/mkqa_scoring.py``; needs ``MKQA_OFFICIAL_DIR``, else null).

Run: ``.venv/bin/python benchmarks/eval_throughput.py [--instances 800] [--delay 0.05]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DO_NOT_TRACK", "1")

import yaml  # noqa: E402

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.inference.prompting import InferenceConfig  # noqa: E402
from tasks.inference.respond import answer_instances  # noqa: E402
from tasks.warehouse.db import Warehouse  # noqa: E402
from tests.fake_llm_server import FakeLLMServer, fake_client  # noqa: E402

CONCURRENCY = 16


def _instances(home: Path, count: int) -> None:
    """``count`` closed-book MKQA-style instances with one gold answer each."""
    gold = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('bench', 'mkqa', ['en'], 'import:bench', '{}', now())")
        cur.executemany("INSERT INTO instances VALUES ('bench', ?, ?, 'mkqa', 'closed_book', 'en', ?, 'Velna', 'en',"
                        " NULL, NULL, '[]', 0, 'fp', ?)",
                        [[f"{i}|closed_book|en", str(i), f"Which river is number {i}?", gold] for i in range(count)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=800)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the server takes per request")
    args = parser.parse_args()
    ceiling = CONCURRENCY / args.delay
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(delay=args.delay, lifetime=3600) as server:
        home = Path(tmp) / "stage"
        _instances(home, args.instances)
        with Warehouse(home) as wh:
            client = fake_client(wh, server, max_concurrency=CONCURRENCY, timeout=30.0)
            say(f"inference stage: {args.instances} requests, {CONCURRENCY} in flight, {args.delay}s each")
            cold = best_of("inference stage (cold)", 1, lambda: answer_instances(
                wh, client, "bench", "closed_book", "en", "fake", InferenceConfig(), "fp"))
        stage_rps = per_second(args.instances, cold.seconds)

        flow_home = Path(tmp) / "flow"
        _instances(flow_home, args.instances)
        (flow_home / "models.yaml").write_text(yaml.safe_dump({"models": [{
            "name": "bench", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat",
            "max_concurrency": CONCURRENCY}]}))
        from flows.evaluate import EvaluateParams, evaluate_flow
        from prefect.testing.utilities import prefect_test_harness

        params = EvaluateParams(benchmark="bench", models=["bench"], judges=[], home=str(flow_home))
        with prefect_test_harness(server_startup_timeout=120):
            first = best_of("evaluate flow (cold)", 1, lambda: evaluate_flow(params))
            calls = len(server.calls)
            rerun = best_of("evaluate flow (rerun, nothing changed)", 1, lambda: evaluate_flow(params))
        assert len(server.calls) == calls, "the rerun sent requests"

    official = subprocess.run([sys.executable, str(Path(__file__).with_name("mkqa_scoring.py")), "--examples", "2000",
                               "--repeat", "1"], capture_output=True, text=True, check=True)
    mkqa = json.loads(official.stdout.strip().splitlines()[-1])
    emit("eval_throughput",
         {"instances": args.instances, "delay_s": args.delay, "concurrency": CONCURRENCY, "ceiling_rps": ceiling,
          "inference_rps": round(stage_rps, 1), "flow_cold_s": round(first.seconds, 2),
          "flow_rerun_s": round(rerun.seconds, 2), "mkqa_examples_per_s": mkqa["metrics"]["ours_examples_per_s"]},
         {"vs_endpoint": round(stage_rps / ceiling, 3), "rerun_ratio": round(rerun.seconds / first.seconds, 3),
          "vs_official": mkqa["ratios"]["vs_official"]})


if __name__ == "__main__":
    main()
