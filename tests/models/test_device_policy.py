"""The device policy of the in-process models (tasks.placement): resolution, errors, fingerprints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.distractors.config import DistractorConfig
from tasks.errors import ConfigError
from tasks.placement import (
    BATCH_SIZE_ENV,
    DEVICE_ENV,
    PRECISION_ENV,
    DeviceConfig,
    Placement,
    batch_size,
    device_options,
    placement_params,
    resolve,
)
from tasks.qa.xrag_config import XragConfig
from tasks.rankers.base import make_ranker
from tasks.rankers.dense import DenseRanker
from tasks.stage import ReadFields

torch = pytest.importorskip("torch")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (DEVICE_ENV, PRECISION_ENV, BATCH_SIZE_ENV):
        monkeypatch.delenv(name, raising=False)


@NO_CUDA
def test_auto_is_the_cpu_in_fp32_where_torch_sees_no_cuda() -> None:
    assert resolve(DeviceConfig()) == Placement("cpu", "fp32")
    assert resolve(DeviceConfig.from_env()).params() == {"device": "cpu", "precision": "fp32"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_auto_is_cuda_in_fp16_where_torch_sees_one() -> None:
    placement = resolve(DeviceConfig(device="auto"))
    assert placement.device == "cuda:0" and placement.precision == "fp16"
    assert resolve(DeviceConfig(device="auto", precision="fp32")).precision == "fp32"


@NO_CUDA
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "CUDA:1"])
def test_cuda_asked_for_where_there_is_none_is_a_clear_error(device: str) -> None:
    with pytest.raises(ConfigError, match=r"device cuda(:\d)? was asked for .*--device cpu"):
        resolve(DeviceConfig(device=device))


def test_a_cuda_index_beyond_the_devices_is_an_error() -> None:
    with pytest.raises(ConfigError, match="cuda:99 was asked for"):
        resolve(DeviceConfig(device="cuda:99"))


@pytest.mark.parametrize("device", ["tpu", "gpu", "cuda:x", ""])
def test_an_unknown_device_names_the_choices(device: str) -> None:
    with pytest.raises(ConfigError, match="use auto, cpu, cuda, cuda:N or mps"):
        resolve(DeviceConfig(device=device))


def test_fp16_on_the_cpu_is_refused() -> None:
    with pytest.raises(ConfigError, match="fp16 was asked for on the cpu"):
        resolve(DeviceConfig(device="cpu", precision="fp16"))


def test_the_environment_is_the_default_policy_and_never_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    monkeypatch.setenv(BATCH_SIZE_ENV, "7")
    assert resolve(DeviceConfig.from_env()) == Placement("cpu", "fp32", 7)
    assert batch_size(object(), resolve(DeviceConfig.from_env()), "bi") == 7  # a fixed size wins over any derivation
    # the configs that run models read it as their default, at construction
    from tasks.features import FeatureModels

    assert FeatureModels().device == DeviceConfig(device="cpu", batch_size=7)
    monkeypatch.setenv(BATCH_SIZE_ENV, "seven")
    with pytest.raises(ConfigError, match=f"{BATCH_SIZE_ENV}='seven'"):
        DeviceConfig.from_env()
    monkeypatch.setenv(BATCH_SIZE_ENV, "")
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    with pytest.raises(ConfigError, match=f"{PRECISION_ENV}='bf16': use auto, fp16 or fp32"):
        DeviceConfig.from_env()


def test_cpu_batch_sizes_stay_those_used_before_the_policy() -> None:
    # 64 texts per bi-encoder batch (the dense ranker's), 32 pairs per cross-encoder batch (CrossEncoder.predict's)
    assert batch_size(object(), Placement("cpu", "fp32"), "bi") == 64
    assert batch_size(object(), Placement("cpu", "fp32"), "cross") == 32


@NO_CUDA
def test_command_options_replace_the_environment_and_fail_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv(DEVICE_ENV, "auto")
    monkeypatch.setenv(BATCH_SIZE_ENV, "8")
    assert device_options(None, None, None) == DeviceConfig(device="auto", batch_size=8)  # the environment's
    assert device_options("cpu", "fp32", 16) == DeviceConfig(device="cpu", precision="fp32", batch_size=16)
    assert (os.environ[DEVICE_ENV], os.environ[BATCH_SIZE_ENV]) == ("auto", "8")  # a typed setting, not the env
    with pytest.raises(ConfigError, match="device cuda was asked for"):
        device_options("cuda", None, None)


def test_the_embedding_fingerprint_changes_with_precision_not_with_the_gpu_index() -> None:
    def key(placement: Placement) -> str:
        return DenseRanker("some/model", placement=placement).cache_key("documents-fp")

    fp32, fp16 = key(Placement("cuda:0", "fp32")), key(Placement("cuda:0", "fp16"))
    assert fp32 != fp16
    assert key(Placement("cpu", "fp32")) not in (fp32, fp16)
    assert key(Placement("cuda:1", "fp16")) == fp16  # which GPU of a kind computed it does not change a vector


def test_a_stage_running_a_model_records_its_placement_and_one_without_records_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The features, distractors and xrag-pairs fingerprints take these keys: a model's stage cell computed in
    one precision is never a cache hit for another, and a stage without a model keeps its fingerprint."""
    from tasks.stage import ReadFields

    cpu = DeviceConfig(device="cpu")
    assert placement_params("some/model", cpu) == {"device": "cpu", "precision": "fp32"}
    assert placement_params(None, cpu) == {}
    with_model = ReadFields(values={"dense_model": "m", **placement_params("m", cpu)})
    monkeypatch.setattr("tasks.placement.resolve", lambda config: Placement("cuda:0", "fp16"))
    assert ReadFields(values={"dense_model": "m", **placement_params("m", cpu)}).fingerprint_fields() != (
        with_model.fingerprint_fields())
    assert ReadFields(values={"dense_model": None, **placement_params(None, cpu)}).fingerprint_fields() == {
        "dense_model": None}


def test_the_index_is_part_of_the_ranker_spec_and_an_approximate_one_of_its_name() -> None:
    cpu = Placement("cpu", "fp32")
    assert make_ranker("dense:m", cpu).name == "dense:m"
    assert make_ranker("dense@flat:m", cpu).name == "dense:m"  # exact: the same rankings
    ranker = make_ranker("dense@hnsw:m", cpu)
    assert (ranker.name, ranker.index) == ("dense@hnsw:m", "hnsw")
    with pytest.raises(ConfigError, match="unknown dense index 'annoy'"):
        make_ranker("dense@annoy:m", cpu)


def test_the_placement_is_recorded_on_the_mlflow_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    from tasks.placement import log_placement
    from tasks.tracking import tracking_uri

    for copied in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID"):  # MLflow copies its choices there: restored after
        monkeypatch.delenv(copied, raising=False)
    mlflow.set_tracking_uri(tracking_uri(tmp_path))
    experiment = mlflow.create_experiment("placement")  # this store's own, not the process's last experiment
    with mlflow.start_run(experiment_id=experiment) as run:
        log_placement(Placement("cuda:1", "fp16"))
    assert mlflow.get_run(run.info.run_id).data.params == {"placement.device": "cuda", "placement.precision": "fp16"}


@NO_CUDA
def test_clir_eval_with_an_absent_device_stops_with_one_error_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "BABELBENCH_"))}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "DO_NOT_TRACK": "1"}
    done = subprocess.run([sys.executable, "-m", "flows.cli", "--home", str(tmp_path / "home"), "clir", "eval",
                           "--name", "c", "--ranker", "dense:m", "--device", "cuda"],
                          capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[2], timeout=300)
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stdout + done.stderr
    assert "device cuda was asked for" in errors[0] and "Traceback" not in done.stderr


@pytest.mark.parametrize("config_type", [XragConfig, DistractorConfig], ids=lambda t: t.__name__)
def test_where_a_stage_runs_never_enters_what_it_read(config_type: type) -> None:
    # moving a stage to a GPU must not recompute it: the device field is left out of the read fields
    # (it was an environment variable outside every fingerprint before it became a typed field)
    names = tuple(config_type.model_fields)
    on_cpu = ReadFields.of(config_type(device=DeviceConfig(device="cpu")), *names).fingerprint_fields()
    on_gpu = ReadFields.of(config_type(device=DeviceConfig(device="cuda", precision="fp16", batch_size=8)),
                           *names).fingerprint_fields()
    assert "device" not in on_cpu
    assert on_cpu == on_gpu
    # every other field still counts
    other = next(name for name in names if name != "device" and isinstance(on_cpu.get(name), int | float)
                 and not isinstance(on_cpu.get(name), bool))
    changed = config_type(**{other: on_cpu[other] + 1})
    assert ReadFields.of(changed, *names).fingerprint_fields() != on_cpu
