"""Where and in what precision the in-process models run: one policy for every one of them.

The dense ranker, the cross-encoder reranker, the NLI and reranker features
and the distractor embedder all load sentence-transformers models through
:func:`load_bi_encoder` / :func:`load_cross_encoder` on the :class:`Placement`
their stage's typed :class:`DeviceConfig` resolves to (read from the
environment only as the configs' default), so one setting moves them all:
``BABELBENCH_DEVICE`` (or a command's ``--device``) = ``auto``
(CUDA when torch sees one, else the CPU), ``cpu``, ``cuda``, ``cuda:N`` or
``mps``; ``BABELBENCH_PRECISION`` = ``auto`` (fp16 on CUDA, fp32 elsewhere),
``fp16`` or ``fp32``; ``BABELBENCH_BATCH_SIZE`` fixes the batch size, which is
otherwise derived from the model and the device's free memory.

An explicit device that is not there is an error, never a silent fallback to
the CPU: a run that was meant for a GPU and takes days on a CPU is worse than
a run that stops at once. The resolved device kind and precision go into the
fingerprints of what the models compute (:meth:`Placement.params`), so a
result computed in fp16 is never served for an fp32 request, or the reverse.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import ConfigError

DEVICE_ENV = "BABELBENCH_DEVICE"
PRECISION_ENV = "BABELBENCH_PRECISION"
BATCH_SIZE_ENV = "BABELBENCH_BATCH_SIZE"

Precision = Literal["auto", "fp16", "fp32"]

CPU_BATCH = {"bi": 64, "cross": 32}
"""Batch sizes on the CPU (those used before the policy existed): a CPU gains nothing from larger batches."""
MAX_BATCH = 1024
MEMORY_SHARE = 0.5
"""Share of the accelerator's free memory one batch's activations may take (the rest: weights, the allocator's
slack, another model of the same process)."""


class DeviceConfig(BaseModel):
    """What the user asked for; :func:`resolve` turns it into a :class:`Placement` on this machine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str = Field("auto", description="auto (CUDA when torch sees one), cpu, cuda, cuda:N or mps.")
    precision: Precision = Field("auto", description="auto (fp16 on CUDA, fp32 elsewhere), fp16 or fp32.")
    batch_size: int | None = Field(None, ge=1, description="Texts (or pairs) per batch; None: from the model and free memory.")

    @classmethod
    def from_env(cls) -> DeviceConfig:
        """The policy named by ``BABELBENCH_DEVICE`` / ``BABELBENCH_PRECISION`` / ``BABELBENCH_BATCH_SIZE``."""
        batch = os.environ.get(BATCH_SIZE_ENV, "").strip()
        if batch and not batch.isdigit():
            raise ConfigError(f"{BATCH_SIZE_ENV}={batch!r}: a positive whole number is needed")
        precision = os.environ.get(PRECISION_ENV, "auto").strip() or "auto"
        if precision not in ("auto", "fp16", "fp32"):
            raise ConfigError(f"{PRECISION_ENV}={precision!r}: use auto, fp16 or fp32")
        return cls(device=os.environ.get(DEVICE_ENV, "auto").strip() or "auto", precision=precision,  # type: ignore[arg-type]
                   batch_size=int(batch) if batch else None)


@dataclass(frozen=True)
class Placement:
    """A resolved policy: the torch device, the precision, and every device a corpus may be encoded on."""

    device: str  # "cpu", "cuda:0", "mps"
    precision: Literal["fp16", "fp32"]
    batch_size: int | None = None  # a fixed batch size, or None to derive it
    pool: tuple[str, ...] = ()  # several CUDA devices: encode a corpus on all of them (auto / cuda only)

    @property
    def kind(self) -> str:
        return self.device.partition(":")[0]

    def params(self) -> dict[str, str]:
        """What enters a fingerprint and MLflow: the device kind (which GPU of a kind does not change a
        result) and the precision (which does)."""
        return {"device": self.kind, "precision": self.precision}


def placement_params(model: str | None, config: DeviceConfig) -> dict[str, str]:
    """The placement a stage's fingerprint records when the stage runs ``model`` in process; nothing without one,
    so a stage that loads no model keeps its fingerprint whatever the device policy says."""
    return resolve(config).params() if model else {}


_DEVICE = re.compile(r"auto|cpu|mps|cuda(?::(\d+))?")


def resolve(config: DeviceConfig) -> Placement:
    """The placement ``config`` asks for on this machine; an absent device is a :class:`ConfigError` saying what
    torch sees."""
    match = _DEVICE.fullmatch(config.device.strip().lower())
    if match is None:
        raise ConfigError(f"unknown device {config.device!r} ({DEVICE_ENV} / --device): use auto, cpu, cuda, cuda:N or mps")
    name = match.group(0)
    pool: tuple[str, ...] = ()
    if name == "cpu":
        device = "cpu"
    else:
        import torch

        cuda_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if name == "auto":
            device = "cuda:0" if cuda_count else "cpu"
        elif name == "mps":
            if not torch.backends.mps.is_available():
                raise ConfigError("device mps was asked for but torch sees no MPS (Apple GPU) device; use --device cpu or auto")
            device = "mps"
        else:
            index = int(match.group(1) or 0)
            if index >= cuda_count:
                build = (f"this torch {torch.__version__} was built without CUDA" if torch.version.cuda is None
                         else f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees {cuda_count} CUDA device(s)")
                raise ConfigError(f"device {name} was asked for ({DEVICE_ENV} / --device) but {build}; "
                                  "use --device cpu, or auto to take a GPU only where there is one")
            device = f"cuda:{index}"
        if device.startswith("cuda") and match.group(1) is None and cuda_count > 1:
            pool = tuple(f"cuda:{i}" for i in range(cuda_count))
    precision = config.precision
    if precision == "auto":
        precision = "fp16" if device.startswith("cuda") else "fp32"
    elif precision == "fp16" and device == "cpu":
        raise ConfigError("precision fp16 was asked for on the cpu, where torch computes it slowly or not at all; "
                          "use --precision fp32 (or auto) on the cpu")
    return Placement(device, precision, config.batch_size, pool)


def batch_size(model: Any, placement: Placement, role: Literal["bi", "cross"]) -> int:
    """The fixed batch size, or on the CPU today's, or on an accelerator the largest power of two whose
    activations (one layer's at a time, at the model's maximum length) fit a share of the free memory."""
    if placement.batch_size is not None:
        return placement.batch_size
    if placement.kind != "cuda":
        return CPU_BATCH[role]
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(placement.device))
    config = _hf_config(model)
    hidden = getattr(config, "hidden_size", 768)
    heads = getattr(config, "num_attention_heads", 12)
    intermediate = getattr(config, "intermediate_size", 4 * hidden)
    length = getattr(model, "max_seq_length", None) or getattr(model, "max_length", None) or 512
    element = 2 if placement.precision == "fp16" else 4
    # q, k, v, attention output, residual and the feed-forward's widening per token, plus the heads' score matrices
    per_sequence = element * length * (6 * hidden + 2 * intermediate + heads * length)
    fits = max(1, int(free * MEMORY_SHARE // per_sequence))
    return max(8, min(MAX_BATCH, 1 << (fits.bit_length() - 1)))


def _hf_config(model: Any) -> Any:
    """The transformers config of a SentenceTransformer's first module or of a CrossEncoder."""
    inner = getattr(model, "model", None)
    if inner is not None and hasattr(inner, "config"):
        return inner.config
    try:
        return model[0].auto_model.config
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def _placed(model: Any, placement: Placement) -> Any:
    model.to(placement.device)
    if placement.precision == "fp16":
        model.half()
    model.eval()
    return model


@cache
def load_bi_encoder(name: str, placement: Placement) -> Any:
    """A sentence-transformers bi-encoder on ``placement``, loaded once per process and placement."""
    from sentence_transformers import SentenceTransformer

    return _placed(SentenceTransformer(name, device=placement.device), placement)


@cache
def load_cross_encoder(name: str, placement: Placement) -> Any:
    """A sentence-transformers cross-encoder on ``placement``, loaded once per process and placement."""
    from sentence_transformers import CrossEncoder

    return _placed(CrossEncoder(name, device=placement.device), placement)


def device_options(device: str | None, precision: str | None, batch: int | None) -> DeviceConfig:
    """The policy of a command's ``--device`` / ``--precision`` / ``--batch-size``: the given options over the
    environment's, checked at once so an absent device fails before any work."""
    given = {name: value for name, value in (("device", device), ("precision", precision), ("batch_size", batch))
             if value is not None}
    config = DeviceConfig.model_validate(DeviceConfig.from_env().model_dump() | given)
    resolve(config)
    return config


def log_placement(placement: Placement) -> None:
    """Record the placement as parameters of the active MLflow run, beside the run's config."""
    import mlflow

    if mlflow.active_run() is not None:
        mlflow.log_params({f"placement.{key}": value for key, value in placement.params().items()})
