"""Tolerant readers of model output, each returning a parse status instead of raising.

Models wrap answers in markdown, change the keywords' case, forget a closing
tag or add a preamble; a strict parser would throw away answers a reader
would accept.  Each reader here accepts those variations and, when it still
finds nothing, returns ``parse_failed`` with a reason that is stored on the
item — nothing is dropped silently.

Completion prompts end with the label the model should continue ("Question:"),
so the reply lacks it: pass that label as ``primed`` and it is put back before
parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

#: An item's status after its model step: the parse outcome, or why there was nothing to parse.
ItemStatus = Literal["ok", "parse_failed", "call_failed", "skipped_budget"]


@dataclass(frozen=True)
class Parsed:
    """A reader's verdict: ``value`` when ``status`` is ok, else ``reason`` says what was missing."""

    status: ItemStatus
    value: Any = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def failed(reason: str) -> Parsed:
    return Parsed("parse_failed", None, reason)


_LABEL = r"[*_#\s]*{name}[*_\s]*[:：][*_\s]*"
_QUESTION = re.compile(_LABEL.format(name=r"(?:question|q)"), re.IGNORECASE)
_ANSWER = re.compile(_LABEL.format(name=r"(?:answer|a)"), re.IGNORECASE)
_NEXT_LABEL = re.compile(
    r"^\s*(?:\d+[.)]\s*|[-•]\s*)?[*_#]*\s*(?:question|answer|q|a|summary|explanation|note|passage)\s*[*_]*\s*[:：]",
    re.IGNORECASE | re.MULTILINE,
)


_QUOTES = {'"': '"', "'": "'", "“": "”", "„": "“", "«": "»", "「": "」", "『": "』"}


def unwrap(value: str) -> str:
    """A field's text without surrounding markdown emphasis and one pair of wrapping quotes."""
    value = value.strip().strip("*_`").strip()
    if len(value) >= 2 and _QUOTES.get(value[0]) == value[-1]:
        value = value[1:-1].strip()
    return value


def _clean(value: str, *, first_line: bool = False) -> str:
    """One field's text: its first paragraph (or line), unwrapped."""
    value = value.strip().split("\n\n")[0].strip()
    if first_line:
        value = value.split("\n")[0]
    return unwrap(value)


def parse_qa_pairs(text: str, *, primed: str = "", limit: int | None = None) -> Parsed:
    """Every ``Question: … Answer: …`` pair in order (value: list of (question, answer)).

    A pair needs both fields non-empty; a question without an answer ends the
    list (a reply cut off by ``max_tokens`` keeps its complete pairs).  An
    answer is one line: what follows it is the model carrying on the pattern.
    """
    text = primed + text
    pairs: list[tuple[str, str]] = []
    position = 0
    while limit is None or len(pairs) < limit:
        question_label = _QUESTION.search(text, position)
        if question_label is None:
            break
        answer_label = _ANSWER.search(text, question_label.end())
        if answer_label is None:
            break
        question = _clean(text[question_label.end():answer_label.start()])
        following = _NEXT_LABEL.search(text, answer_label.end())
        end = following.start() if following else len(text)
        answer = _clean(text[answer_label.end():end], first_line=True)
        if question and answer:
            pairs.append((question, answer))
        position = end
    if not pairs:
        return failed("no 'Question: … Answer: …' pair in the reply")
    return Parsed("ok", pairs)


def parse_question_answer(text: str, *, primed: str = "") -> Parsed:
    """The first ``Question: … Answer: …`` pair (value: (question, answer))."""
    parsed = parse_qa_pairs(text, primed=primed, limit=1)
    return Parsed("ok", parsed.value[0]) if parsed.ok else parsed


def parse_tag(text: str, tag: str, *, primed: str = "") -> Parsed:
    """The text inside ``<tag>…</tag>`` (value: str); an unclosed tag runs to the end of the reply."""
    text = primed + text
    match = re.search(rf"<{tag}>(.*?)(?:</{tag}>|$)", text, re.IGNORECASE | re.DOTALL)
    if match is None or not match.group(1).strip():
        return failed(f"no <{tag}> in the reply")
    return Parsed("ok", match.group(1).strip())


_YES = {"yes", "y", "true", "related", "correct", "natural", "answerable"}
_NO = {"no", "n", "false", "unrelated", "incorrect", "unnatural", "unanswerable"}


def parse_yes_no(text: str, *, primed: str = "") -> Parsed:
    """A yes/no verdict (value: bool) from the first decisive word of the reply."""
    for word in re.findall(r"[A-Za-z]+", primed + text):
        lowered = word.lower()
        if lowered in _YES:
            return Parsed("ok", True)
        if lowered in _NO:
            return Parsed("ok", False)
    return failed("no yes/no verdict in the reply")


def parse_tagged_yes_no(text: str, tag: str, *, primed: str = "") -> Parsed:
    """A yes/no verdict (value: bool) inside ``<tag>…</tag>``: the form of every yes/no check's reply."""
    inside = parse_tag(text, tag, primed=primed)
    if not inside.ok:
        return inside
    verdict = parse_yes_no(inside.value)
    return verdict if verdict.ok else failed(f"<{tag}> holds no yes/no: {inside.value[:60]!r}")
