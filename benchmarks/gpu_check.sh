#!/usr/bin/env bash
# The GPU check of the neural stages (issue 24), for a machine with one NVIDIA GPU whose Python has only torch,
# transformers and sentence-transformers: everything else comes from a folder of wheels made beforehand where
# the project's package index is reachable, or the part that needs it is skipped (and says so).
#
#   benchmarks/gpu_check.sh --download DIR   # here: the project's other pinned dependencies as wheels in DIR,
#                                            # for the GPU machine's Python (GPU_CHECK_PYTHON_VERSION, default 3.11)
#   benchmarks/gpu_check.sh [DIR]            # there: install DIR's wheels offline into a venv over the system's
#                                            # torch, then run the check (a few minutes)
#
# Checks, in order: torch sees CUDA; the device policy's auto picks cuda:0 in fp16 (and fp32 on request);
# the device-policy and dense-search tests; benchmarks/dense_encoding.py on CUDA (stage_vs_raw, docs/s in fp16
# and fp32, search over 1 M vectors, FAISS recall, a 50,000 × 1,000 evaluation against brute force); a tiny
# `babelbench clir eval --ranker dense:<local tiny model>` on the CPU and on CUDA (fp16), whose NDCG@10 must
# agree to 1e-3. Exit status 0 only if every check that ran passed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if [[ "${1:-}" == "--download" ]]; then
    dir=${2:?usage: benchmarks/gpu_check.sh --download DIR}
    mkdir -p "$dir"
    # every pinned package but the torch stack the GPU machine brings (and its CUDA libraries)
    grep -v -i -E '^(torch|transformers|sentence-transformers|tokenizers|safetensors|huggingface-hub|nvidia-|triton|llama-cpp-python|hf-xet)' \
        constraints.txt > "$dir/requirements.txt"
    failed=()
    while read -r requirement; do
        [[ -z "$requirement" ]] && continue
        "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version "${GPU_CHECK_PYTHON_VERSION:-3.11}" \
            --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
            --platform linux_x86_64 -d "$dir" "$requirement" 2>/dev/null || failed+=("$requirement")
    done < "$dir/requirements.txt"
    echo "wheels in $dir: $(ls "$dir"/*.whl | wc -l); without a wheel (parts needing them are skipped): ${failed[*]:-none}"
    exit 0
fi

wheels=${1:-}
status=0
note() { echo "== $*"; }
fail() { echo "!! $*"; status=1; }

"$PYTHON" -c "import torch, transformers, sentence_transformers; assert torch.cuda.is_available(), 'torch sees no CUDA device'
print('torch', torch.__version__, 'CUDA', torch.version.cuda, torch.cuda.get_device_name(0))" || { echo "!! no usable GPU"; exit 1; }

if [[ -n "$wheels" ]]; then
    venv=${TMPDIR:-/tmp}/babelbench-gpu-check-venv
    "$PYTHON" -m venv --system-site-packages "$venv"
    # one at a time, so that a wheel built for another Python or platform is skipped, not fatal
    for wheel in "$wheels"/*.whl; do
        "$venv/bin/pip" install --quiet --no-index --no-deps "$wheel" 2>/dev/null || echo "   skipped $(basename "$wheel")"
    done
    PYTHON=$venv/bin/python
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} DO_NOT_TRACK=1 BABELBENCH_HOME=${TMPDIR:-/tmp}/babelbench-gpu-check-home
unset BABELBENCH_DEVICE BABELBENCH_PRECISION BABELBENCH_BATCH_SIZE

note "device policy"
"$PYTHON" - <<'EOF' || fail "device policy"
from tasks.rankers.device import DeviceConfig, resolve
auto = resolve()
assert (auto.device, auto.precision) == ("cuda:0", "fp16"), auto
assert resolve(DeviceConfig(precision="fp32")).precision == "fp32"
print("auto:", auto)
EOF

if "$PYTHON" -c "import pytest" 2>/dev/null; then
    note "tests"
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_device_policy.py tests/test_dense_search.py || fail "tests"
else
    note "tests skipped: no pytest"
fi

note "dense_encoding.py on CUDA"
if "$PYTHON" -c "import duckdb, pyarrow, pydantic, upath, orjson, faiss" 2>/dev/null; then
    timeout 600 "$PYTHON" benchmarks/dense_encoding.py --device auto --docs 4096 --models small,base \
        --search-vectors 1000000 --search-queries 10000 --search-dim 768 --ann-vectors 50000 \
        --eval-docs 50000 --eval-queries 1000 | tee "${TMPDIR:-/tmp}/dense_encoding.json" || fail "dense_encoding.py"
else
    note "dense_encoding.py skipped: duckdb, pyarrow, pydantic, universal_pathlib, orjson or faiss missing (pass a wheel folder)"
fi

note "clir eval: CPU against CUDA"
"$PYTHON" - <<'EOF' || fail "clir eval on CUDA differs from the CPU"
import os, re, shutil, subprocess, sys
from pathlib import Path

from benchmarks.dense_encoding import synthetic_collection
from tasks.warehouse.db import Warehouse
from tests.tiny_models import build_bi_encoder

home = Path(os.environ["BABELBENCH_HOME"])
shutil.rmtree(home, ignore_errors=True)
with Warehouse(home) as wh:
    docs, _ = synthetic_collection(wh, 600, 80, name="gpu-check")
model = build_bi_encoder([f"{title} {text}" for _, title, text in docs], home / "model")

def ndcg(device: str) -> float:
    try:
        import flows.cli  # noqa: F401 (the whole command line: Prefect, MLflow, typer)
    except ImportError as exc:
        print(f"   the command line needs {exc.name}; evaluating through tasks.metrics.clir_eval.evaluate instead")
        from tasks.metrics.clir_eval import ALL, evaluate
        from tasks.rankers.dense import DenseRanker
        from tasks.rankers.device import DeviceConfig, resolve
        with Warehouse(home) as wh:
            result = evaluate(wh, "gpu-check", DenseRanker(str(model), placement=resolve(DeviceConfig(device=device))),
                              ALL, f"check-{device}", k=100, n_resamples=100)
        return next(r["value"] for r in result.metrics if r["metric"] == "ndcg@10" and r["src_lang"] == "en")
    done = subprocess.run([sys.executable, "-m", "flows.cli", "clir", "eval", "--name", "gpu-check",
                           "--ranker", f"dense:{model}", "--split", "all", "--device", device],
                          capture_output=True, text=True, check=True)
    print(done.stdout.strip())
    return float(re.search(r"en > de\s+ndcg@10 ([0-9.]+)", done.stdout).group(1))

cpu, cuda = ndcg("cpu"), ndcg("auto")
print(f"ndcg@10 cpu {cpu:.4f}, cuda fp16 {cuda:.4f}, difference {abs(cpu - cuda):.5f}")
assert abs(cpu - cuda) <= 1e-3
EOF

if [[ $status -eq 0 ]]; then echo "GPU check passed"; else echo "GPU check FAILED"; fi
exit $status
