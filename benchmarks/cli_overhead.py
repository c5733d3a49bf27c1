"""How long small ``babelbench`` commands take, against importing Prefect and MLflow in the same sitting.

Users run many small commands; each should answer like a command-line tool. Every command is a fresh process
(``python -m flows.cli``, as the ``babelbench`` script runs it) on a home and a Prefect home built in a temporary
directory, with no ``PREFECT_API_URL``, so each flow command finds its Prefect API the way a user's does:

* ``import``: ``import mkqa`` of the bundled sample (``tasks/sample/mkqa_sample.jsonl``), imported before: a
  cache hit;
* ``rerun``: ``rerun --stage import --scope mkqa``: that cached stage recomputed, everything else as before;
* ``leaderboard``: ``leaderboard --benchmark mkqa`` after ``eval`` of the ``oracle`` baseline on it;
* ``score``: ``score mkqa`` of one language's predictions against the sample;
* ``floor``: ``python -c "import prefect, mlflow"``, the least any flow command can take.

Before timing, one of each runs unmeasured (the first flow command may start the Prefect API that the others
reuse: its seconds are ``first_flow_command_s``). Then ``--repeat`` rounds run every command once, in turn, so a
change of machine load touches all of them alike; each reports its median (``<name>_s``), and
``<name>_vs_floor`` its median ÷ the floor's. Goals: a cached flow command (``import``, ``rerun``) at most 1.5,
``leaderboard`` and ``score`` at most 1. A local Prefect API this run started is stopped at the end.

Run: ``.venv/bin/python benchmarks/cli_overhead.py [--repeat 5] [--checkout DIR]``; ``--checkout`` times the CLI
of another checkout of babelbench (e.g. a ``git worktree`` of an older commit) with this script and environment, so
before and after are measured alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import emit, say  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tasks" / "sample" / "mkqa_sample.jsonl"


def _predictions(directory: Path) -> Path:
    """English predictions for the sample: each example's first answer, so the scorer has real matches to do."""
    path = directory / "en.jsonl"
    with SAMPLE.open(encoding="utf-8") as gold, path.open("w", encoding="utf-8") as out:
        for line in gold:
            example = json.loads(line)
            answer = example["answers"]["en"][0]
            out.write(json.dumps({"example_id": example["example_id"], "prediction": answer.get("text") or "",
                                  "binary_answer": None, "no_answer_prob": 0.0}) + "\n")
    return path


def _run(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds ``command`` took in ``cwd``; a failure stops the benchmark with its output."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed with exit {done.returncode}:\n{done.stdout[-2000:]}"
                         f"\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (every command once per round)")
    parser.add_argument("--checkout", type=Path, default=REPO, help="the babelbench checkout whose CLI is timed")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_API", "BABELBENCH_"))}
        env |= {"PREFECT_HOME": str(root / "prefect"), "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PYTHONPATH": str(checkout)}
        cli = [sys.executable, "-m", "flows.cli", "--home", str(home)]
        predictions = _predictions(root)
        commands = {
            "import": [*cli, "import", "mkqa", "--source", str(SAMPLE)],
            "rerun": [*cli, "rerun", "--stage", "import", "--scope", "mkqa"],
            "leaderboard": [*cli, "leaderboard", "--benchmark", "mkqa"],
            "score": [*cli, "score", "mkqa", "--gold", str(SAMPLE), "--predictions", str(predictions), "--langs", "en"],
            "floor": [sys.executable, "-c", "import prefect, mlflow"],
        }
        try:
            say("preparing: import mkqa, eval --models oracle (unmeasured)")
            first = _run(commands["import"], env, checkout)
            _run([*cli, "eval", "--benchmark", "mkqa", "--models", "oracle"], env, checkout)
            for name, command in commands.items():
                _run(command, env, checkout)
            times: dict[str, list[float]] = {name: [] for name in commands}
            for round_ in range(1, args.repeat + 1):
                for name, command in commands.items():
                    times[name].append(_run(command, env, checkout))
                say(f"  round {round_}/{args.repeat}: " + ", ".join(f"{name} {t[-1]:.2f} s" for name, t in times.items()))
        finally:
            subprocess.run([*cli, "server", "stop"], env=env, cwd=checkout, capture_output=True)  # none before issue 30
    medians = {name: statistics.median(values) for name, values in times.items()}
    metrics = {"checkout": str(checkout), "repeat": args.repeat, "cpu_count": os.cpu_count(),
               "first_flow_command_s": round(first, 2),
               **{f"{name}_s": round(seconds, 2) for name, seconds in medians.items()}}
    ratios = {f"{name}_vs_floor": round(medians[name] / medians["floor"], 2) for name in commands if name != "floor"}
    emit("cli_overhead", metrics, ratios)


if __name__ == "__main__":
    main()
