"""Judges' verdicts: the JSON form every judge and check is asked for, and a reader that never guesses.

Judge prompts ask for one JSON object (a short justification, then the
verdict), and backends that can constrain a reply to a JSON schema do so
(:data:`YES_NO`, :data:`PAIRWISE`, :data:`QC_CHECKS`).  A reply that is not
such an object is read strictly: a verdict is taken only when the text says
one thing plainly.  Negated, hedged or conflicting wording is a
``parse_failed`` verdict with its reason, stored and counted as
``judge_failed`` — "not correct" must never be read as "correct".  The full
rules, with examples, are in ``docs/evaluation.md`` ("Reading a verdict").
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

import regex

from tasks.llm.parsing import Parsed, failed
from tasks.llm.types import ResponseFormat
from tasks.text.verdict_words import yes_no_words

_JUSTIFICATION = {"type": "string"}
_YES_OR_NO = {"type": "string", "enum": ["yes", "no"]}
#: A pointwise verdict: does the answer hold (correct, supported, related …)?
YES_NO = ResponseFormat.of("yes_no_verdict", {
    "type": "object", "properties": {"justification": _JUSTIFICATION, "verdict": _YES_OR_NO},
    "required": ["justification", "verdict"], "additionalProperties": False})
#: A pairwise verdict: which of the two answers shown is better, or a tie.
PAIRWISE = ResponseFormat.of("pairwise_verdict", {
    "type": "object", "properties": {"reason": _JUSTIFICATION, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["reason", "winner"], "additionalProperties": False})
#: The QA pre-screen's three checks of one generated item.
QC_CHECKS = ResponseFormat.of("qc_checks", {
    "type": "object",
    "properties": {"justification": _JUSTIFICATION, "natural": _YES_OR_NO, "answerable": _YES_OR_NO, "correct": _YES_OR_NO},
    "required": ["justification", "natural", "answerable", "correct"], "additionalProperties": False})

#: English words that state a verdict in prose ("The answer is incorrect."), by polarity.
POSITIVE = frozenset("yes correct right true accurate supported related answerable valid".split())
NEGATIVE = frozenset("no incorrect wrong false inaccurate unsupported unrelated unanswerable invalid".split())
#: Words that turn a verdict round or leave it open: a reply holding one is not read ("not correct", "partly right").
NEGATORS = frozenset("not never neither nor cannot hardly".split())
HEDGES = frozenset("partly partially somewhat mostly largely maybe perhaps possibly probably likely unclear uncertain"
                   " unsure arguably half almost nearly roughly depends ambiguous but however although though"
                   " except".split())
#: The keys a JSON verdict may come under: the schema's, and the words judges put in its place.
_KEYS = ("verdict", "correct", "supported", "related", "answers", "answer", "decision", "judgement", "judgment",
         "result")
_REASONS = ("justification", "reason", "rationale", "explanation")
_WORD = regex.compile(r"\w+(?:['’]\w+)*")
#: "no" followed by a word is a determiner that negates what follows ("no idea", "no error"), not the answer "No."
_DETERMINER_NO = regex.compile(r"\bno(?=\s+\w)")
_EDGES = regex.compile(r"^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$")
#: Raw line breaks inside a string are tolerated: a model writing a justification over two lines said what it meant.
_LENIENT_JSON = json.JSONDecoder(strict=False)
_FENCE = regex.compile(r"^```(?:json)?\s*(.*?)\s*(?:```)?$", regex.DOTALL | regex.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """A judge's decision (True/False for yes/no; 'a', 'b' or 'tie' for a pair) and its stated reason, if any."""

    value: bool | str
    justification: str | None = None


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _json_object(text: str) -> dict[str, Any] | None | str:
    """The first JSON object in the reply (code fences allowed, what follows it ignored); None when the reply holds
    none; a reason string when the reply starts like JSON but does not parse (cut off, malformed)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    body = fenced.group(1) if fenced else body
    start = body.find("{")
    if start < 0:
        return None
    try:
        value, _ = _LENIENT_JSON.raw_decode(body, start)
    except json.JSONDecodeError as error:
        if start > 0:
            return None  # a brace inside prose, not an object: the prose is read instead
        return f"the reply is not valid JSON ({error.msg} at character {error.pos}): cut off or malformed"
    return value if isinstance(value, dict) else "the reply's JSON is not an object"


def _field(found: dict[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    lowered = {str(key).casefold(): (key, value) for key, value in found.items()}
    return next((lowered[name] for name in names if name in lowered), None)


def _justification(found: dict[str, Any]) -> str | None:
    reason = _field(found, _REASONS)
    return str(reason[1]).strip() or None if reason is not None and reason[1] is not None else None


def yes_no_word(text: str, lang: str) -> bool | None:
    """True/False when ``text`` is, whole, a yes or no word of ``lang`` or English (markdown and punctuation around
    it ignored: "**Ja.**", "はい。"); else None."""
    word = _EDGES.sub("", _normal(text).replace("*", "").replace("_", " ")).strip()
    yes, no = yes_no_words(lang)
    return True if word in yes else False if word in no else None


def read_plain_yes_no(text: str, lang: str) -> Parsed:
    """A yes/no verdict from plain text, taken only when unambiguous (value: bool).

    The whole text being one yes/no word of ``lang`` or English is a verdict.
    Otherwise English prose is read by its verdict words, and refused when it
    negates, hedges or says both (see the module notes).
    """
    word = yes_no_word(text, lang)
    if word is not None:
        return Parsed("ok", word)
    words = _WORD.findall(_normal(text))
    if not words:
        return failed("the verdict is empty")
    negated = [w for w in words if w in NEGATORS or w.endswith(("n't", "n’t"))] + _DETERMINER_NO.findall(_normal(text))
    if negated:
        return failed(f"the verdict is negated ({negated[0]!r}): not read, to avoid guessing")
    hedged = [w for w in words if w in HEDGES]
    if hedged:
        return failed(f"the verdict is hedged ({hedged[0]!r}): neither yes nor no")
    said = {w in POSITIVE for w in words if w in POSITIVE or w in NEGATIVE}
    if len(said) != 1:
        return failed("no yes/no verdict in the reply" if not said else "the reply says both yes and no")
    return Parsed("ok", said.pop())


def read_yes_no(reply: str, lang: str, *, tag: str | None = None) -> Parsed:
    """A pointwise verdict (value: :class:`Verdict` with a bool): the JSON object's ``verdict``, else the text
    inside ``<tag>…</tag>`` when the reply has one, else the whole reply, read by :func:`read_plain_yes_no`."""
    text = reply
    found = _json_object(text)
    if isinstance(found, str):
        return failed(found)
    if found is not None:
        return _structured_yes_no(found, lang)
    if tag is not None:
        inside = regex.search(rf"<{tag}>(.*?)(?:</{tag}>|$)", text, regex.IGNORECASE | regex.DOTALL)
        text = inside.group(1) if inside else text
    parsed = read_plain_yes_no(text, lang)
    return Parsed("ok", Verdict(parsed.value)) if parsed.ok else parsed


def _structured_yes_no(found: dict[str, Any], lang: str) -> Parsed:
    field = _field(found, _KEYS)
    if field is None:
        return failed(f"the reply's JSON has no verdict field (keys: {', '.join(map(str, found)) or 'none'})")
    key, value = field
    if isinstance(value, bool):
        return Parsed("ok", Verdict(value, _justification(found)))
    if not isinstance(value, str):
        return failed(f"the JSON {key!r} is {value!r}, not yes or no")
    parsed = read_plain_yes_no(value, lang)
    return Parsed("ok", Verdict(parsed.value, _justification(found))) if parsed.ok else failed(
        f"the JSON {key!r} is {value[:60]!r}: {parsed.reason}")


_PAIR_TOKEN = regex.compile(r"\[\[\s*\**\s*(a|b|c|tie)\s*\**\s*\]\]", regex.IGNORECASE)
_SIDE = r"(?:(?:assistant|answer|response|option|system)\s+)?([ab])\b"
_PROSE_WIN = regex.compile(rf"\b{_SIDE}\s+(?:is|was)\s+(?:clearly\s+|slightly\s+|much\s+)?(?:the\s+)?better\b"
                           rf"|\b{_SIDE}\s+wins\b|\bprefer\s+{_SIDE}|\bwinner\s*(?:is|:)\s*{_SIDE}", regex.IGNORECASE)
_PROSE_TIE = regex.compile(r"\b(?:tie|equally\s+(?:good|bad|poor|correct|helpful|wrong)"
                           r"|both\s+(?:are\s+)?(?:equally|the\s+same)|neither\s+is\s+better|no\s+difference)\b",
                           regex.IGNORECASE)
_READ_SIDE = {"a": "a", "b": "b", "c": "tie", "tie": "tie"}


def side_word(text: str) -> str | None:
    """'a', 'b' or 'tie' when ``text`` is, whole, a side ("A", "[[B]]", "Answer A", "tie", "C"); else None."""
    word = _EDGES.sub("", _normal(text).replace("*", "")).strip()
    word = regex.sub(r"^(?:assistant|answer|response|option|system)\s+", "", word)
    return _READ_SIDE.get(word)


def read_pairwise(reply: str) -> Parsed:
    """A pairwise verdict (value: :class:`Verdict` with 'a' — the answer shown first —, 'b' or 'tie').

    In order: the JSON object's ``winner``; the ``[[A]]``/``[[B]]``/``[[C]]``
    tokens, which must all agree; English prose ("Assistant A is better",
    "both are equally good"), refused when the sentence is negated or the
    reply names two outcomes.
    """
    found = _json_object(reply)
    if isinstance(found, str):
        return failed(found)
    if found is not None:
        field = _field(found, ("winner", "verdict", "better", "choice"))
        side = side_word(str(field[1])) if field is not None else None
        if side is None:
            return failed(f"the reply's JSON names no winner A, B or tie: {json.dumps(found)[:80]}")
        return Parsed("ok", Verdict(side, _justification(found)))
    tokens = {_READ_SIDE[token.casefold()] for token in _PAIR_TOKEN.findall(reply)}
    if len(tokens) == 1:
        return Parsed("ok", Verdict(tokens.pop()))
    if tokens:
        return failed(f"the reply gives conflicting verdicts ({', '.join(sorted(tokens))})")
    return _prose_pairwise(reply)


def _prose_pairwise(reply: str) -> Parsed:
    side = side_word(reply)
    if side is not None:
        return Parsed("ok", Verdict(side))
    outcomes = set()
    for sentence in regex.split(r"(?<=[.!?;\n])\s*", reply):
        wins = {match.group(match.lastindex).casefold() for match in _PROSE_WIN.finditer(sentence)}
        ties = {"tie"} if _PROSE_TIE.search(sentence) else set()
        rest = _WORD.findall(_normal(_PROSE_TIE.sub(" ", sentence)))  # "neither is better" is a tie, not a negation
        if (wins or ties) and any(w in NEGATORS or w.endswith(("n't", "n’t")) for w in rest):
            return failed(f"the verdict is negated: {sentence.strip()[:80]!r}")
        outcomes |= wins | ties
    if len(outcomes) != 1:
        return failed("no [[A]], [[B]] or [[C]] verdict in the reply" if not outcomes
                      else f"the reply names several outcomes ({', '.join(sorted(outcomes))})")
    return Parsed("ok", Verdict(outcomes.pop()))


def read_checks(reply: str, lang: str, labels: dict[str, str]) -> dict[str, Parsed]:
    """Each named check's yes/no (check name → Parsed with a bool) from a reply with several verdicts: the JSON
    object's fields (``labels``: check name → JSON key), else ``Label: yes`` lines read strictly."""
    text = reply
    found = _json_object(text)
    if isinstance(found, str):
        return {check: failed(found) for check in labels}
    out = {}
    for check, key in labels.items():
        if found is not None:
            value = _field(found, (key,))
            out[check] = (failed(f"the reply's JSON has no {key!r}") if value is None
                          else Parsed("ok", value[1]) if isinstance(value[1], bool)
                          else read_plain_yes_no(str(value[1]), lang))
            continue
        line = regex.search(rf"^[\s*_#>-]*{key}[\s*_]*[:：]([^\n]*)", text, regex.IGNORECASE | regex.MULTILINE)
        out[check] = failed(f"no '{key}: yes/no' line in the reply") if line is None else read_plain_yes_no(
            line.group(1), lang)
    return out
