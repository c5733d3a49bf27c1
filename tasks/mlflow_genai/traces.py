"""Finished traces written after the fact: what was asked, answered and judged, as MLflow 3 traces with assessments.

The warehouse already holds every call, answer and verdict, so a trace is
built from its rows once scoring is done — never inside the model calls,
which are cached and may run on Dask workers.  A :class:`TraceRecord` is
plain data (a tree of :class:`SpanRecord`, the verdicts as
:class:`Verdict`, the gold answers as :class:`Gold`); :func:`write_traces`
turns records into MLflow entities and writes them in batches: one
``start_trace`` per trace carrying its tags, its link to the run and every
assessment, then one ``log_spans`` for the spans of the whole batch.  MLflow's
fluent tracing (``mlflow.start_span``, ``mlflow.log_feedback``) would spend
a call per span and per assessment, and stamps the wall clock on spans
that describe calls made earlier.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

#: Traces per write: one ``log_spans`` call carries the spans of this many traces.
BATCH = 200
#: How long a request or response preview may be (MLflow's own previews are cut to this length).
PREVIEW_CHARS = 1000
HUMAN, LLM_JUDGE, CODE = "HUMAN", "LLM_JUDGE", "CODE"


@dataclass(frozen=True)
class SpanRecord:
    """One step of a trace: its kind (an MLflow span type), when it started and ended, what it read and gave."""

    name: str
    span_type: str
    start_ns: int
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why the step failed; the span's status is then ERROR
    children: tuple[SpanRecord, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """A feedback on the trace: a judge's or a rule's value, who gave it, and why; ``error`` when it gave none."""

    name: str
    value: bool | float | str | None
    source_type: str  # HUMAN | LLM_JUDGE | CODE
    source_id: str
    rationale: str | None = None
    error: tuple[str, str] | None = None  # (code, message) of a verdict that was not given
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Gold:
    """An expectation on the trace: what the benchmark holds to be the right answer."""

    name: str
    value: Any
    source_id: str


@dataclass(frozen=True)
class TraceRecord:
    """A trace: its root span (and children), tags to find it by, its verdicts and gold answers."""

    root: SpanRecord
    tags: dict[str, str] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    golds: tuple[Gold, ...] = ()
    prompts: tuple[tuple[str, str], ...] = ()  # (prompt name, version) of the registered templates it used


def _encoded(number: int, size: int) -> str:
    return base64.b64encode(number.to_bytes(size, "big")).decode()


def _span_dicts(record: SpanRecord, otel_trace: int, trace_id: str) -> list[dict[str, Any]]:
    """The spans of ``record``'s tree in MLflow's span dictionary form (``Span.from_dict``), depth first, span ids
    1, 2, … in that order."""
    spans: list[dict[str, Any]] = []

    def add(span: SpanRecord, parent: int | None) -> None:
        span_id = len(spans) + 1
        attributes = {"mlflow.traceRequestId": trace_id, "mlflow.spanType": span.span_type,
                      "mlflow.spanInputs": span.inputs, "mlflow.spanOutputs": span.outputs, **span.attributes}
        spans.append({
            "trace_id": _encoded(otel_trace, 16), "span_id": _encoded(span_id, 8),
            "parent_span_id": _encoded(parent, 8) if parent else None, "name": span.name,
            "start_time_unix_nano": span.start_ns, "end_time_unix_nano": span.end_ns, "events": [],
            "status": {"code": "STATUS_CODE_ERROR" if span.error else "STATUS_CODE_OK", "message": span.error or ""},
            # MLflow keeps every attribute value JSON-encoded
            "attributes": {key: json.dumps(value, ensure_ascii=False, default=str) for key, value in attributes.items()},
        })
        for child in span.children:
            add(child, span_id)

    add(record, None)
    return spans


def _preview(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text[:PREVIEW_CHARS]


def _failed(record: SpanRecord) -> bool:
    return record.error is not None or any(_failed(child) for child in record.children)


def trace_entities(record: TraceRecord, experiment_id: str, run_id: str | None) -> tuple[Any, list[Any]]:
    """``(TraceInfo, [Span])`` of one record, with a fresh trace id: the trace is in ERROR state when any of its
    steps failed, belongs to ``run_id`` (the run's Traces tab lists it) and carries every verdict and gold answer
    as an assessment on its root span."""
    from mlflow.entities import (
        AssessmentError,
        AssessmentSource,
        Expectation,
        Feedback,
        Span,
        TraceInfo,
        TraceLocation,
        TraceState,
    )

    otel_trace = uuid.uuid4().int
    trace_id = f"tr-{otel_trace:032x}"
    spans = [Span.from_dict(data) for data in _span_dicts(record.root, otel_trace, trace_id)]
    root_span = spans[0].span_id
    assessments: list[Any] = []
    for verdict in record.verdicts:
        feedback = Feedback(
            name=verdict.name, value=verdict.value, rationale=verdict.rationale, trace_id=trace_id,
            source=AssessmentSource(source_type=verdict.source_type, source_id=verdict.source_id),
            error=AssessmentError(error_code=verdict.error[0], error_message=verdict.error[1]) if verdict.error else None,
            metadata=({"mlflow.assessment.sourceRunId": run_id} if run_id else {}) | verdict.metadata)
        feedback.span_id = root_span
        assessments.append(feedback)
    for gold in record.golds:
        expectation = Expectation(name=gold.name, value=gold.value, trace_id=trace_id,
                                  source=AssessmentSource(source_type=HUMAN, source_id=gold.source_id))
        expectation.span_id = root_span
        assessments.append(expectation)
    tags = {"mlflow.traceName": record.root.name, **record.tags}
    if record.prompts:
        tags["mlflow.linkedPrompts"] = json.dumps([{"name": name, "version": version}
                                                   for name, version in record.prompts])
    metadata = {"mlflow.trace_schema.version": "3"} | ({"mlflow.sourceRun": run_id} if run_id else {})
    info = TraceInfo(
        trace_id=trace_id, trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=record.root.start_ns // 1_000_000,
        execution_duration=(record.root.end_ns - record.root.start_ns) // 1_000_000,
        state=TraceState.ERROR if _failed(record.root) else TraceState.OK,
        request_preview=_preview(record.root.inputs), response_preview=_preview(record.root.outputs),
        trace_metadata=metadata, tags=tags, assessments=assessments)
    return info, spans


def _batches(records: Iterable[TraceRecord], size: int) -> Iterator[list[TraceRecord]]:
    iterator = iter(records)
    while batch := list(islice(iterator, size)):
        yield batch


def write_traces(tracking_uri: str, experiment_id: str, run_id: str | None, records: Iterable[TraceRecord],
                 batch: int = BATCH) -> list[str]:
    """Write ``records`` as traces of ``run_id`` in ``experiment_id``, ``batch`` at a time; their trace ids.

    Each trace is created whole (``start_trace``: tags, run link, assessments)
    before its spans are logged: the store then takes the trace's fields as
    final and only adds the spans, where spans first would make it create
    the trace and merge it again.  Needs a SQL-backed store or a tracking
    server (MLflow keeps spans in the database there).
    """
    from mlflow.tracing.client import TracingClient

    client = TracingClient(tracking_uri)
    written: list[str] = []
    for chunk in _batches(records, batch):
        spans: list[Any] = []
        for record in chunk:
            info, trace_spans = trace_entities(record, experiment_id, run_id)
            client.start_trace(info)
            spans += trace_spans
            written.append(info.trace_id)
        client.log_spans(experiment_id, spans)
    return written


def span_window(start_ns: int, seconds: float | None) -> tuple[int, int]:
    """(start, end) in nanoseconds of a step that took ``seconds`` (None: not measured, shown as instantaneous)."""
    return start_ns, start_ns + int(round((seconds or 0.0) * 1e9))
