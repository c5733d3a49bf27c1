"""Reading the XRAG chain's replies: summaries cut to their word limit, and typed questions with the facts they use.

A typed question must name the simple question–answer pairs ("facts") it
combines — ``Uses: A2, B1`` under the question, A and B being the pair's two
articles — so the build can check what the paper asks of it: at least one
fact from each article, at most ``question_words`` words, and one question
rather than two glued together with "and".  A question that breaks a rule is
kept with the broken rule as its reason; only a reply with no question at all
fails as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tasks.llm.parsing import Parsed, failed, parse_tag
from tasks.qa.eclektic import context_of
from tasks.text.segment import tokenize
from tasks.text.sentences import split_sentences

SUMMARY_TAG = "summary"
ANSWER_TAG = "answer"

_QUESTION_LABEL = re.compile(
    r"^[\s>*_#-]*(?:\d+[.)]\s*)?[*_]*question\s*\d*[*_\s]*[:：][*_\s]*", re.IGNORECASE | re.MULTILINE)
_USES_LABEL = re.compile(r"[*_]*\b(?:uses|used|facts(?:\s+used)?)\b[*_\s]*[:：]", re.IGNORECASE)
_REFERENCE = re.compile(r"\b([AB])\s*[-#.]?\s*(\d{1,2})\b", re.IGNORECASE)
# Two questions in one: a second question mark, or (English) "and" opening a second wh-question.
_ANSWER_TAIL = re.compile(r"[?？]\s+[—–-]\s.*$")
_JOINED = re.compile(r"[?？].*[?？]|\band\s+(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class TypedQuestion:
    """One question of a reply: the facts it names as ``(side, number)`` and, if it breaks a rule, which."""

    question: str
    uses: tuple[tuple[str, int], ...]
    problem: str | None = None

    @property
    def refs(self) -> list[str]:
        return [f"{side}{number}" for side, number in self.uses]


def parse_summary(text: str, lang: str, max_words: int, *, primed: str = "") -> Parsed:
    """The ``<summary>`` of a reply (value: str), cut to the whole sentences that fit in ``max_words``.

    Words are counted by the language's segmenter, so a Chinese or Japanese
    summary is measured in words too, not characters.
    """
    tag = parse_tag(text, SUMMARY_TAG, primed=primed)
    if not tag.ok:
        return tag
    sentences = split_sentences(tag.value, lang)
    kept, words = 0, 0
    for sentence in sentences:
        words += len(tokenize(sentence, lang))
        if words > max_words:
            break
        kept += 1
    if kept == 0:
        return failed(f"the summary's first sentence alone has more than {max_words} words")
    return Parsed("ok", context_of(tag.value, lang, kept))


def parse_typed_questions(
    text: str, *, facts_a: int, facts_b: int, limit: int, max_words: int, lang: str, primed: str = ""
) -> Parsed:
    """The questions of a reply (value: list of :class:`TypedQuestion`, at most ``limit``), each checked.

    The prompts ask for each question's ``Uses:`` line before it (a completion
    prompt then primes ``Uses: A``, so a small model starts from a fact of
    article A); a reply that names the facts after each question instead is
    read as well — the first ``Uses:`` line says which order the reply keeps.
    ``facts_a`` and ``facts_b`` are how many facts each article offered, to
    catch a reference to a fact that was never shown.
    """
    text = primed + text
    labels = list(_QUESTION_LABEL.finditer(text))
    first_uses = _USES_LABEL.search(text)
    uses_first = bool(labels) and first_uses is not None and first_uses.start() < labels[0].start()
    questions = []
    for index, label in enumerate(labels):
        block = text[label.end(): labels[index + 1].start() if index + 1 < len(labels) else len(text)]
        if uses_first:
            before = text[labels[index - 1].end() if index else 0: label.start()]
            uses = _last(_USES_LABEL.finditer(before))
            question, named = block.strip().split("\n")[0], before[uses.end():] if uses else ""
        else:
            uses = _USES_LABEL.search(block)
            question = (block[: uses.start()] if uses else block).strip().split("\n")[0]
            named = block[uses.end():] if uses else ""
        # a small model copies the facts' "question — answer" form: the answer must not ride along
        question = _ANSWER_TAIL.sub("?", question).strip("*_` ([-–—")
        if not question:
            continue
        if uses is None:
            questions.append(TypedQuestion(question, (), "no 'Uses:' line naming the facts the question combines"))
            continue
        references = tuple(dict.fromkeys(
            (side.upper(), int(number)) for side, number in _REFERENCE.findall(named.split("\n")[0])))
        questions.append(TypedQuestion(question, references,
                                       _problem(question, references, facts_a, facts_b, max_words, lang)))
    if not questions:
        return failed("no 'Question: …' in the reply")
    return Parsed("ok", questions[:limit])


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    found = None
    for found in matches:
        pass
    return found


def _problem(question: str, uses: tuple[tuple[str, int], ...], facts_a: int, facts_b: int, max_words: int,
             lang: str) -> str | None:
    """The first rule the question breaks, or None."""
    if not uses:
        return "the 'Uses:' line names no fact (A1, B2, …)"
    offered = {"A": facts_a, "B": facts_b}
    for side, number in uses:
        if not 1 <= number <= offered[side]:
            return f"uses {side}{number}, but article {side} has {offered[side]} facts"
    for side in "AB":
        if side not in {s for s, _ in uses}:
            return f"uses no fact of article {side}: the question must need both articles"
    words = len(tokenize(question, lang))
    if words > max_words:
        return f"{words} words > {max_words}"
    if _JOINED.search(question):
        return "two questions joined in one"
    return None


def parse_answer(text: str, *, primed: str = "") -> Parsed:
    """The ``<answer>`` of a reply (value: str)."""
    return parse_tag(text, ANSWER_TAG, primed=primed)
