"""The window of a live build: which articles count as new, by the first dump they appeared in.

An article is in the window when its first-appearance date (view ``document_dates``) falls within it and is exact,
that is, not the "on or before" date of a wiki's earliest ingested dump: such a date cannot show that the article is
new.  An article is before the window when it first appeared before ``since`` (an "on or before" date counts: the
article is at least that old).  Both ends are inclusive and compare dump dates, so ``20261101:20261101`` takes the
articles new in the 2026-11-01 dump.  See docs/live-benchmarks.md.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.dumps.appearance import dump_day
from tasks.errors import ConfigError


class Window(BaseModel):
    """``since`` to ``until`` (open-ended when empty), both inclusive."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    since: date = Field(description="First day (or dump date) of the window.")
    until: date | None = Field(None, description="Last day (or dump date) of the window; open-ended when empty.")

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        """``SINCE[:UNTIL]`` as text (the CLI's and a form's way of giving it)."""
        if not isinstance(value, str):
            return value
        since, _, until = value.partition(":")
        return {"since": dump_day(since.strip()), "until": dump_day(until.strip()) if until.strip() else None}

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.until is not None and self.until < self.since:
            raise ValueError(f"window {self}: UNTIL is before SINCE")
        return self

    def __str__(self) -> str:
        return f"{self.since.isoformat()}:{self.until.isoformat() if self.until else ''}"

    def outside(self, first: date | None, on_or_before: bool) -> str | None:
        """Why an article first seen on ``first`` is not new in this window; None when it is."""
        if first is None:
            return f"no first-appearance date (its language has no dated dump ingested): not shown new in the window {self}"
        if on_or_before:
            return f"first seen in the earliest ingested dump ({first.isoformat()}, on or before): not shown new in the window {self}"
        if first < self.since or (self.until is not None and first > self.until):
            return f"first appeared {first.isoformat()}, outside the window {self}"
        return None


def window_columns(window: Window | None) -> tuple[date | None, date | None]:
    """``qa_items.window_since`` and ``window_until`` of an item built with ``window``."""
    return (window.since, window.until) if window else (None, None)


def parse_window(text: str) -> Window:
    """``SINCE[:UNTIL]`` (dates YYYY-MM-DD or dump dates YYYYMMDD) as a :class:`Window`; a ConfigError naming it."""
    try:
        return Window.model_validate(text)
    except ValidationError as exc:
        raise ConfigError(f"--window {text!r}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
