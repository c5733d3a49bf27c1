"""What the home remembers of each model endpoint: the structured-output mode it takes, and who answers there.

A record per endpoint — base URL, model id and API (chat or completion) —
in ``$BABELBENCH_HOME/endpoints.json``, written atomically under a file lock
so that workers sharing a home do not lose each other's records.  A run
reads it instead of probing the server again; the record is learned again
when the entry's endpoint fields change (its backend, or where its key comes
from: the URL, model and API are the key itself), or on request
(``babelbench models check NAME --relearn``).  ``served`` keeps what the server
said about the model it serves, so a server restarted with another model
under the same name is noticed (:mod:`tasks.llm.check`).

:class:`Negotiation` is one model's mode in a process: what its calls ask
for now, stepping down :data:`~tasks.llm.structured.LADDER` when a real call
is refused for the field, and remembering the step.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.errors import ConfigError
from tasks.llm.registry import ModelSpec
from tasks.llm.structured import LADDER, StructuredMode, next_mode
from tasks.warehouse.atomic import atomic_write_text

log = logging.getLogger(__name__)

ENDPOINTS_FILE = "endpoints.json"


class EndpointRecord(BaseModel):
    """One endpoint as last learned."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str
    api: Literal["chat", "completion"]
    entry: str = Field(description="Digest of the entry's endpoint fields it was learned for.")
    structured: StructuredMode
    refused: dict[str, str] = Field(default_factory=dict, description="Why each rung above `structured` was not"
                                    " taken, in the server's words.")
    served: dict[str, Any] = Field(default_factory=dict, description="What the server said of the model it serves.")
    learned_at: str


def endpoint_key(spec: ModelSpec) -> str:
    """``<base URL> <model> <api>``: the records' key (an empty base URL is the SDK's default, OpenAI's)."""
    return f"{spec.base_url or 'default'} {spec.model} {spec.mode}"


def entry_digest(spec: ModelSpec) -> str:
    """The entry's fields that decide who answers and how; editing its limits or prices keeps the record."""
    fields = [spec.backend, spec.base_url, spec.model, spec.mode, spec.api_key_env, spec.api_key_secret]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class EndpointMemory:
    """The home's ``endpoints.json``."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / ENDPOINTS_FILE
        self._lock = FileLock(str(self.path) + ".lock", thread_local=False)

    def get(self, spec: ModelSpec) -> EndpointRecord | None:
        """The record for ``spec``'s endpoint, if it was learned for this entry."""
        record = self._read().get(endpoint_key(spec))
        return record if record is not None and record.entry == entry_digest(spec) else None

    def records(self) -> dict[str, EndpointRecord]:
        return self._read()

    def put(self, spec: ModelSpec, record: EndpointRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            records = self._read()
            records[endpoint_key(spec)] = record
            text = json.dumps({key: value.model_dump(mode="json") for key, value in sorted(records.items())},
                              ensure_ascii=False, indent=1)
            atomic_write_text(self.path, text + "\n")

    def _read(self) -> dict[str, EndpointRecord]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.path}: cannot read the remembered endpoints ({exc}); delete the file to learn"
                              " them again") from exc
        try:
            return {key: EndpointRecord.model_validate(value) for key, value in raw.items()}
        except (AttributeError, ValidationError) as exc:
            raise ConfigError(f"{self.path}: not a record of endpoints ({exc}); delete the file to learn them"
                              " again") from exc


class Negotiation:
    """One model's structured-output mode in this process: the learned one, lowered when a call is refused for it.

    Shared by every batch of the model (the client keeps one per model) and
    used from the call loop's thread, and the mode only ever steps down, so a
    lock around the step is all it needs.
    """

    def __init__(self, spec: ModelSpec, memory: EndpointMemory | None, record: EndpointRecord | None) -> None:
        self.spec = spec
        self._memory = memory
        self._record = record
        self._mode: StructuredMode = record.structured if record is not None else LADDER[0]
        self._lock = threading.Lock()

    @property
    def mode(self) -> StructuredMode:
        return self._mode

    def refused(self, mode: StructuredMode, words: str) -> StructuredMode | None:
        """A call asking by ``mode`` was refused for it: the mode to ask by now (None when ``mode`` is the last)."""
        with self._lock:
            if mode != self._mode:  # another call already stepped past it
                return self._mode
            lower = next_mode(mode)
            if lower is None:
                return None
            self._mode = lower
            log.warning("model %r: the server refused structured output by %s (%s); its requests ask by %s from now on",
                        self.spec.name, mode, words, lower)
            if self._record is not None and self._memory is not None:
                self._record = self._record.model_copy(update={
                    "structured": lower, "refused": self._record.refused | {mode: words}, "learned_at": now_text()})
                self._memory.put(self.spec, self._record)
            return lower
