"""How close evaluation gets to the endpoint's ceiling, how cheap a rerun is, and MKQA scoring speed.

* ``vs_endpoint``: the inference stage's requests/s against a loopback
  OpenAI-compatible server that answers each request after a fixed delay
  (``benchmarks/_delay_endpoint.py``, its own process), with 16 requests in
  flight, divided by that server's ceiling (16 / delay) — what the stage's
  own overhead costs (goal ≥ 0.9).  The default delay, 0.25 s, is at the
  fast end of real model endpoints; the OpenAI SDK alone on the same
  endpoint is reported beside it (``sdk_rps``) as the client-side ceiling;
* ``rerun_ratio``: an evaluation rerun with nothing changed ÷ its cold run,
  both through the Prefect flow (goal ≤ 0.05: every cell a cache hit, no
  request sent);
* ``vs_official``: MKQA official-mode scoring against the official script
  (``benchmarks/mkqa_scoring.py``; needs ``MKQA_OFFICIAL_DIR``, else null).

Run: ``.venv/bin/python benchmarks/eval_throughput.py [--instances 2000] [--delay 0.25]``.
"""

from __future__ import annotations

import argparse
import asyncio
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
from benchmarks._delay_endpoint import DelayEndpoint  # noqa: E402
from tasks.inference.prompting import InferenceConfig  # noqa: E402
from tasks.llm import LLMClient, ModelSpec, Registry  # noqa: E402
from tasks.inference.respond import answer_instances  # noqa: E402
from tasks.warehouse.db import Warehouse  # noqa: E402

CONCURRENCY = 16


def _instances(home: Path, count: int) -> None:
    """``count`` closed-book MKQA-style instances with one gold answer each."""
    gold = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('bench', 'mkqa', ['en'], 'import:bench', '{}', now())")
        cur.executemany("INSERT INTO instances VALUES ('bench', ?, ?, 'mkqa', 'closed_book', 'en', ?, 'Velna', 'en',"
                        " NULL, NULL, '[]', 0, 'fp', ?, NULL, NULL)",
                        [[f"{i}|closed_book|en", str(i), f"Which river is number {i}?", gold] for i in range(count)])


async def _sdk_only(base_url: str, count: int) -> None:
    """``count`` requests through the OpenAI SDK alone, 16 at a time: the client-side ceiling."""
    import openai

    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(number: int) -> None:
        async with gate:
            await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": f"river {number}"}])

    await asyncio.gather(*(one(number) for number in range(count)))
    await sdk.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--delay", type=float, default=0.25, help="seconds the server takes per request")
    args = parser.parse_args()
    ceiling = CONCURRENCY / args.delay
    with tempfile.TemporaryDirectory() as tmp, DelayEndpoint(args.delay) as server:
        entry = {"name": "bench", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat",
                 "max_concurrency": CONCURRENCY, "timeout": 30.0}
        say(f"{args.instances} requests, {CONCURRENCY} in flight, {args.delay}s each (ceiling {ceiling:.0f}/s)")
        sdk = best_of("OpenAI SDK alone", 1, lambda: asyncio.run(_sdk_only(server.base_url, args.instances)))
        home = Path(tmp) / "stage"
        _instances(home, args.instances)
        with Warehouse(home) as wh:
            client = LLMClient(wh, Registry(models=(ModelSpec(**entry),), source="benchmark"))
            cold = best_of("inference stage (cold)", 1, lambda: answer_instances(
                wh, client, "bench", "closed_book", "en", "bench", InferenceConfig(), "fp"))
        stage_rps = per_second(args.instances, cold.seconds)

        flow_home = Path(tmp) / "flow"
        _instances(flow_home, args.instances)
        (flow_home / "models.yaml").write_text(yaml.safe_dump({"models": [entry]}))
        from flows.evaluate import EvaluateParams, evaluate_flow
        from prefect.testing.utilities import prefect_test_harness

        params = EvaluateParams(benchmark="bench", models=["bench"], judges=[], home=str(flow_home))
        with prefect_test_harness(server_startup_timeout=120):
            first = best_of("evaluate flow (cold)", 1, lambda: evaluate_flow(params))
            calls = server.requests_served()
            rerun = best_of("evaluate flow (rerun, nothing changed)", 1, lambda: evaluate_flow(params))
        assert server.requests_served() == calls, "the rerun sent requests"

    official = subprocess.run([sys.executable, str(Path(__file__).with_name("mkqa_scoring.py")), "--examples", "10000",
                               "--repeat", "1"], capture_output=True, text=True, check=True)
    mkqa = json.loads(official.stdout.strip().splitlines()[-1])
    emit("eval_throughput",
         {"instances": args.instances, "delay_s": args.delay, "concurrency": CONCURRENCY, "ceiling_rps": ceiling,
          "inference_rps": round(stage_rps, 1), "sdk_rps": round(per_second(args.instances, sdk.seconds), 1), "flow_cold_s": round(first.seconds, 2),
          "flow_rerun_s": round(rerun.seconds, 2), "mkqa_examples_per_s": mkqa["metrics"]["ours_examples_per_s"]},
         {"vs_endpoint": round(stage_rps / ceiling, 3), "rerun_ratio": round(rerun.seconds / first.seconds, 3),
          "vs_official": mkqa["ratios"]["vs_official"]})


if __name__ == "__main__":
    main()
