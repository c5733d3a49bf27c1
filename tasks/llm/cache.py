"""The warehouse cache of model calls (table ``llm_calls``, migration 003).

One row per distinct request, written as soon as the call returns — calls
that finish while a write is under way go together in the next transaction
(a group commit) — so a crash or a kill loses at most the calls of the
write in flight, never work stored before it.  Only ``ok`` rows
are served: a ``failed`` row records why the last try failed and is replaced
when a rerun calls again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tasks.llm.registry import ModelSpec
from tasks.llm.types import LLMRequest, LLMResponse
from tasks.warehouse.db import Warehouse, insert_rows


def request_payload(spec: ModelSpec, request: LLMRequest) -> dict[str, Any]:
    """Everything that determines a model's answer; the registry name and endpoint are not part of it.

    Two registry entries serving the same model (a hosted API and a proxy to
    it) therefore share their cache, and moving an endpoint keeps it.  A
    request without a response format hashes as it did before the field
    existed, so earlier cached calls stay valid.
    """
    unset = {"response_format"} if request.response_format is None else set()
    return {"backend": spec.backend, "model": spec.model, "mode": spec.mode} | request.model_dump(mode="json",
                                                                                                exclude=unset)


def request_hash(spec: ModelSpec, request: LLMRequest) -> str:
    canonical = orjson.dumps(request_payload(spec, request), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def cached_responses(wh: Warehouse, hashes: Iterable[str]) -> dict[str, LLMResponse]:
    """The stored ``ok`` answers among ``hashes``."""
    wanted = sorted(set(hashes))
    if not wanted:
        return {}
    rows = wh.query(
        "SELECT request_hash, response_text, input_tokens, output_tokens, finish_reason, latency_s, raw"
        " FROM llm_calls WHERE status = 'ok' AND request_hash IN (SELECT unnest(?))",
        [wanted],
    )
    return {
        row[0]: LLMResponse(row[1], row[2], row[3], row[4], row[5], orjson.loads(row[6]) if row[6] else {})
        for row in rows
    }


@dataclass(frozen=True)
class FinishedCall:
    """One call's outcome as it is stored: its answer (status ok) or, without a response, its error (failed)."""

    key: str
    model_name: str
    spec: ModelSpec
    request: LLMRequest
    stage: str
    attempts: int
    response: LLMResponse | None = None
    cost_usd: float = 0.0
    error: str | None = None

    def row(self) -> list[Any]:
        response = self.response
        return [
            self.key, self.model_name, self.spec.backend, self.spec.model, self.spec.mode,
            orjson.dumps(request_payload(self.spec, self.request)).decode(),
            "ok" if response is not None else "failed",
            response.text if response else None,
            response.finish_reason if response else None,
            response.input_tokens if response else None,
            response.output_tokens if response else None,
            response.latency_s if response else None,
            self.cost_usd, self.attempts, self.error, self.stage,
            orjson.dumps(response.raw).decode() if response else None,
        ]


def store_calls(wh: Warehouse, calls: Sequence[FinishedCall]) -> None:
    """Record finished calls in one transaction (a group commit: one commit's cost shared by every call in it)."""
    if not calls:
        return
    with wh.transaction() as cur:
        latest = {row[0]: row for row in (call.row() for call in calls)}  # one row per request hash, the last
        insert_rows(cur, "llm_calls", list(latest.values()), replace=True, then="now()")
