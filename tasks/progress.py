"""Progress of long work, told the same way in the terminal and in the Prefect UI.

A stage over a full dump runs for minutes to hours; an operator needs to see that it moves, how fast (documents,
queries or calls per second) and when it will end. The terminal gets a tqdm bar over the work's parts (its ETA)
with the items and their rate beside it; inside a Prefect flow or task run the same line is a progress artifact of
the run, updated at most every ``PUBLISH_SECONDS`` and once at the end, so the UI shows it without flooding the API.
Parts and items differ where the work is cut into pieces of unknown size: a dump is parsed in byte ranges (parts)
that hold an unknown number of documents (items).
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
from types import TracebackType
from uuid import UUID

from tqdm import tqdm

log = logging.getLogger(__name__)

PUBLISH_SECONDS = 10.0


class Progress:
    """``total`` parts of work (None: not known beforehand, so no ETA) yielding items of ``unit`` (``doc``,
    ``query``, ``call``); see the module."""

    def __init__(self, description: str, total: int | None, unit: str, *, parts: str | None = None) -> None:
        self.description, self.total, self.unit, self.parts = description, total, unit, parts or unit
        self.done = self.items = 0
        self._started = time.monotonic()
        self._published = float("-inf")
        self._artifact: UUID | None = None
        self._context = contextvars.copy_context()  # the Prefect run it belongs to, wherever it is advanced from
        self._bar = tqdm(total=total, desc=description, unit=self.parts, disable=None)

    def advance(self, parts: int = 1, items: int | None = None) -> None:
        """``parts`` more parts done, holding ``items`` items (one per part when not given)."""
        self.done += parts
        self.items += parts if items is None else items
        if items is not None and items != parts:  # parts of many items: show the items beside the bar
            self._bar.set_postfix_str(f"{self.items:,} {self.unit}s, {self.rate():,.0f} {self.unit}s/s", refresh=False)
        self._bar.update(parts)
        if time.monotonic() - self._published >= PUBLISH_SECONDS:
            self._publish()

    def rate(self) -> float:
        """Items per second since the start."""
        return self.items / max(time.monotonic() - self._started, 1e-9)

    def eta_seconds(self) -> float | None:
        """Seconds left at the pace so far (None before the first part)."""
        if self.done == 0 or self.total is None:
            return None
        return (time.monotonic() - self._started) / self.done * max(self.total - self.done, 0)

    def summary(self) -> str:
        """The line the Prefect UI shows: items, rate and ETA."""
        eta = self.eta_seconds()
        left = "" if eta is None else f", ETA {_duration(eta)}"
        of = "" if self.total is None else f" of {self.total:,}"
        return (f"{self.description}: {self.done:,}{of} {self.parts}s, {self.items:,} {self.unit}s, "
                f"{self.rate():,.0f} {self.unit}s/s{left}")

    def close(self) -> None:
        self._bar.close()
        self._publish()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _publish(self) -> None:
        self._published = time.monotonic()
        self._context.copy().run(self._write)

    def _write(self) -> None:
        """Create or update the run's progress artifact; outside a Prefect run there is none."""
        from prefect.artifacts import create_progress_artifact, update_progress_artifact
        from prefect.context import FlowRunContext, TaskRunContext

        if FlowRunContext.get() is None and TaskRunContext.get() is None:
            return
        if self.total is None:
            percent = 0.0  # unknown: the description carries the counts
        else:
            percent = 100.0 * self.done / self.total if self.total else 100.0
        try:  # _sync: also from inside an event loop (the model client's), where Prefect would hand back a coroutine
            if self._artifact is None:
                self._artifact = create_progress_artifact(percent, key=artifact_key(self.description),
                                                          description=self.summary(), _sync=True)  # type: ignore[call-arg]
            else:
                update_progress_artifact(self._artifact, percent, description=self.summary(),
                                         _sync=True)  # type: ignore[call-arg]
        except Exception as exc:  # the UI's view of progress never stops the work it reports on
            log.warning("%s: the progress artifact could not be written (%s)", self.description, exc)


def artifact_key(description: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes) for a progress line."""
    return "progress-" + (re.sub(r"[^a-z0-9]+", "-", description.lower()).strip("-") or "work")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s" if minutes else f"{secs} s"
