"""Tolerant readers of generated text (questions, answers, tagged fields), each returning a parse status.

Models wrap answers in markdown, change case, forget closing tags or add preambles; each reader accepts
that and otherwise returns ``parse_failed`` with a reason, never a silent drop.  Verdicts are read strictly
instead (:mod:`tasks.llm.verdicts`).  Readers are given the model's own answer, past any echo of the prompt
(:func:`echo_end`), never the raw reply; a completion prompt's final label is put back with ``primed``.

See ``docs/evaluation.md``, "Prompts".
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


#: How much of the prompt's ending (non-space characters) a reply must repeat to count as an echo: more than
#: any label of the few-shot pattern ("Question:", "<related>") that a completion model writes again after its
#: answer, so only a repetition of the instance the prompt ends with — the text it asks about — qualifies.
ECHO_MIN_CHARS = 40


def echo_end(reply: str, prompt: str, *, at_start: bool = False) -> int:
    """Where the model's own answer starts in ``reply``: right after its repetition of ``prompt``, else 0.

    Some models repeat the prompt before answering — all of it or from some
    line on, often re-wrapped — and some endpoints return the prompt with the
    completion.  An echo is recognised by the prompt's ending appearing in
    the reply, whitespace ignored: its last lines, as few as hold
    :data:`ECHO_MIN_CHARS` non-space characters (the whole prompt if it is
    shorter).  Whole lines, so that an answer copying the end of the text it
    was given (a translation that leaves a name as it is) is not mistaken for
    an echo: the repetition must include the line's label too.  The answer
    starts after the first appearance.

    ``at_start`` is for completion models: their echo is the endpoint's,
    the prompt (or its end, if the server cut it to the context) ahead of the
    completion, so the reply must open with it.  Whatever a completion model
    writes after its answer — the few-shot pattern carried on, the instance
    itself repeated — then never hides the answer it wrote first.
    """
    tail = ""
    for line in reversed(prompt.splitlines()):
        tail = "".join(line.split()) + tail
        if len(tail) >= ECHO_MIN_CHARS:
            break
    if not tail:
        return 0
    kept = [index for index, char in enumerate(reply) if not char.isspace()]
    squeezed = "".join(reply[index] for index in kept)
    found = squeezed.find(tail)
    before_tail = "".join(prompt.split())[: -len(tail)]
    if found < 0 or (at_start and not before_tail.endswith(squeezed[:found])):
        return 0
    return kept[found + len(tail) - 1] + 1


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
