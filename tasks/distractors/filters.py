"""The rejection rules: why a retrieved document may not serve as a distractor for an item.

A distractor must be on topic yet not help: it must not be a supporting
document, nor the same article in another language (same Wikidata QID), nor
a near-copy of one, nor (when dates exist) too recent, nor state the gold
answer. The rules run in that order, cheapest and most certain first, and the
first that fires is the recorded reason. Redirects and disambiguation pages
are not in the index, so they are never candidates; one that shows up anyway
(an index built from another selection of pages) is rejected as ``not_article``.
The optional model check ("does this document answer the question?") runs
later, in the stage, only on candidates these rules let through.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from tasks.distractors.config import DistractorConfig
from tasks.errors import InputFormatError
from tasks.text.answer_match import AnswerMatcher, match_form
from tasks.warehouse.db import Warehouse

SHINGLE_CHARS = 5
"""Near-duplicates are measured on character 5-grams: word-free, so the same in every script."""


@dataclass(frozen=True)
class Document:
    """A document as the rules see it."""

    lang: str
    page_id: int
    title: str
    text: str
    qid: str | None
    timestamp: datetime | None
    is_article: bool
    first_seen: date | None = None  # first-appearance date (view document_dates); None when its wiki has none

    @property
    def key(self) -> str:
        return f"{self.lang}:{self.page_id}"


def parse_timestamp(value: str | None, where: str) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (UTC when it names no zone); None or blank is None."""
    if value is None or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputFormatError(where, "timestamp", f"{value!r} is not an ISO-8601 date or time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def load_documents(wh: Warehouse, lang: str, page_ids: Iterable[int]) -> dict[int, Document]:
    """The documents of ``lang`` with these page ids (those that exist), keyed by page id."""
    rows = wh.query(
        "SELECT d.page_id, d.title, coalesce(d.text, ''), d.qid, d.timestamp, NOT (d.is_redirect OR d.is_disambiguation),"
        " dd.first_dump FROM documents d LEFT JOIN document_dates dd ON dd.lang = d.lang AND dd.page_id = d.page_id"
        " WHERE d.lang = ? AND list_contains(?, d.page_id)",
        [lang, sorted(set(page_ids))],
    )
    return {
        page_id: Document(lang, page_id, title, text, qid, parse_timestamp(stamp, f"documents {lang}:{page_id}"), article,
                          first)
        for page_id, title, text, qid, stamp, article, first in rows
    }


def shingles(text: str) -> frozenset[str]:
    """The character 5-grams of ``text`` after NFKC, case-folding and whitespace collapsing."""
    flat = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    if len(flat) <= SHINGLE_CHARS:
        return frozenset([flat]) if flat else frozenset()
    return frozenset(flat[i : i + SHINGLE_CHARS] for i in range(len(flat) - SHINGLE_CHARS + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def temporal_cutoff(support: Sequence[datetime | None], gap_days: int | None) -> datetime | None:
    """The latest date a distractor may carry: ``gap_days`` before the earliest dated supporting document.

    None when the rule does not apply (no gap configured, or no supporting date).
    """
    dated = [stamp for stamp in support if stamp is not None]
    if gap_days is None or not dated:
        return None
    return min(dated) - timedelta(days=gap_days)


class TextForms:
    """Each document's 5-gram set and answer-matching form, computed once however many items see it."""

    def __init__(self) -> None:
        self._shingles: dict[str, frozenset[str]] = {}
        self._forms: dict[str, str] = {}

    def shingles(self, doc: Document) -> frozenset[str]:
        if doc.key not in self._shingles:
            self._shingles[doc.key] = shingles(doc.text)
        return self._shingles[doc.key]

    def form(self, doc: Document) -> str:
        if doc.key not in self._forms:
            self._forms[doc.key] = match_form(doc.text, doc.lang)
        return self._forms[doc.key]


@dataclass(frozen=True)
class ItemRules:
    """The rules of one item in one document language."""

    support: tuple[Document, ...]
    answer: AnswerMatcher
    config: DistractorConfig
    before: date | None = None  # a live item's window start: distractors must be older

    def rejection(self, candidate: Document, forms: TextForms) -> str | None:
        """Why ``candidate`` may not be a distractor, as ``code: detail``; None when no rule fires."""
        if not candidate.is_article:
            return "not_article: a redirect or disambiguation page"
        for doc in self.support:
            if doc.key == candidate.key:
                return "supporting: a supporting document of the item"
        for doc in self.support:
            if candidate.qid is not None and doc.qid == candidate.qid:
                return f"same_qid: {candidate.qid}, like the supporting document {doc.key}"
        for doc in self.support:
            similarity = jaccard(forms.shingles(candidate), forms.shingles(doc))
            if similarity >= self.config.near_duplicate:
                return f"near_duplicate: 5-gram Jaccard {similarity:.2f} with the supporting document {doc.key}"
        if self.before is not None and (candidate.first_seen is None or candidate.first_seen >= self.before):
            seen = candidate.first_seen.isoformat() if candidate.first_seen else "no first-appearance date"
            return f"not_before_window: first seen {seen}, not before the window start {self.before.isoformat()}"
        cutoff = temporal_cutoff([doc.timestamp for doc in self.support], self.config.temporal_gap_days)
        if cutoff is not None and candidate.timestamp is not None and candidate.timestamp > cutoff:
            return (f"temporal: dated {candidate.timestamp.isoformat()}, after {cutoff.isoformat()} "
                    f"({self.config.temporal_gap_days} days before the earliest supporting document)")
        if self.answer.found_in(forms.form(candidate)):
            return f"contains_answer: contains the normalised answer {self.answer.form!r}"
        return None
