"""Reading model responses: the answer section and the cited document ids, whatever shape the reply has.

Models asked for ``##Reason: … ##Answer: …`` write it as ``## Answer:``,
``**Answer:**``, ``Answer:``, a heading on its own line, or leave the marker
out; asked for ``<answer>…</answer>`` (XRAG) they may lose the closing tag
to a stop sequence; citations come as ``[id]``, ``[id1, id2]``,
``[id1][id2]`` or ``[id1; id2]``.  The readers accept all of these and
nothing that only looks similar: a markdown link ``[text](url)``, a judge
verdict ``[[A]]`` or an editorial ``[citation needed]`` is not a citation.

A completion (base) model's reply continues its prompt, which ended by
opening the section the model is to write (``Answer:``, ``<answer>``,
``##Reason:``): such a reply is *primed*.  It starts inside that section,
and where the model runs on into a new ``Question:`` or the instructions it
is repeating the template, not replying: the reply ends there, and a reply
that is nothing but the echo holds no answer.  A chat reply is read whole (a
chat model may restate the question before it answers).
"""

from __future__ import annotations

import re
from collections.abc import Collection


def _marker(word: str) -> re.Pattern[str]:
    """``word`` as a section marker: at a line start (``Answer:``, ``**Answer:**``, ``## Answer`` heading) or
    inline with markdown (``… ##Answer: …``) — never the plain word inside a sentence ("I cannot answer")."""
    return re.compile(
        rf"(?:(?:^|\n)[ \t]*[#*_]*[ \t]*{word}[*_]*[ \t]*[:：]"
        rf"|(?:^|\n)[ \t]*#+[ \t]*{word}[*_ \t]*(?=\n)"
        rf"|(?:#+|\*\*)[ \t]*{word}[*_ \t]*[:：])[*_]*",
        re.IGNORECASE)


_ANSWER = _marker("answer")
_REASON = _marker("reason(?:ing)?")
_OPEN_TAG = re.compile(r"<answer>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"</answer>", re.IGNORECASE)
#: A line where a completion model starts its prompt again: one opening a block of the answer templates
#: (tasks/llm/templates/answer_*.j2) — the question, the passages, a document, an article — or an instruction.
#: tests/evaluation/test_response_reading.py renders every template to keep this list in step with them.
_ECHO = re.compile(
    r"(?:^|\n)[ \t]*[#*_]*[ \t]*(?:"
    r"(?:Question|Passages)[*_ \t]*[:：]"  # Question: …  Passages:
    r"|Document[ \t]+\d+:"  # Document 2: Title
    r"|Article[ \t]+\d+[^\n]*:[ \t]*(?=\n|$)"  # Article 1 — Title (2024-06-03):
    r"|Read the (?:documents|articles) below|Answer the question|The answer may be something you learned)")
# One id: letters, digits and the separators ids use (36897421#2, en:41020, doc-3, 12_4), no spaces.
_ID = r"[\w][\w#:.\-/]*"
_CITATION = re.compile(rf"(?<!\[)\[\s*({_ID}(?:\s*[,;]\s*{_ID})*)\s*\](?!\(|\])")


def own_reply(text: str, primed: bool) -> str:
    """The reply without the template a primed reply went on to repeat (see the module notes); a chat reply whole."""
    echo = _ECHO.search(text) if primed else None
    return text[: echo.start()] if echo else text


def _tagged(reply: str) -> str | None:
    """The content of the reply's last ``<answer>`` tag, to its closing tag or to the end; the text before a
    closing tag that the prompt opened; None when the reply has no answer tag."""
    opened = list(_OPEN_TAG.finditer(reply))
    inside = reply[opened[-1].end():] if opened else reply
    closing = _CLOSE_TAG.search(inside)
    if closing is not None:
        return inside[: closing.start()]
    return inside if opened else None


def answer_section(text: str, primed: bool = False) -> str:
    """The answer: the content of the ``<answer>`` tag when there is one, the text after the last answer marker
    (within the tag, if any), else the whole reply; stripped, and for a ``primed`` reply only what precedes an
    echo of the template."""
    reply = own_reply(text, primed)
    tagged = _tagged(reply)
    answer = reply if tagged is None else tagged
    markers = list(_ANSWER.finditer(answer))
    if markers:
        answer = answer[markers[-1].end():]
    return answer.strip().strip("*_").strip()


def reason_section(text: str, primed: bool = False) -> str | None:
    """The text between the reason marker and the answer marker; None without a reason marker.

    A ``primed`` reply continues a prompt that ended with the reason marker
    (MIRAGE's template for a completion model): its reason section starts at
    the beginning (after a repeated marker, if the model wrote one) and ends
    at the answer marker or at an echo of the template; it may be empty.
    """
    reply = own_reply(text, primed)
    if primed:
        body = reply.lstrip()
        repeated = _REASON.match(body)
        start = len(reply) - len(body) + (repeated.end() if repeated else 0)
    else:
        reason = _REASON.search(reply)
        if reason is None:
            return None
        start = reason.end()
    answer = _ANSWER.search(reply, start)
    return reply[start: answer.start() if answer else len(reply)].strip().strip("*_").strip()


def citations(text: str, known: Collection[str] | None = None) -> list[str]:
    """Cited ids in order of first appearance, each once; with ``known``, only the ids among them."""
    cited: dict[str, None] = {}
    for match in _CITATION.finditer(text):
        for part in re.split(r"\s*[,;]\s*", match.group(1)):
            cited.setdefault(part, None)
    return [c for c in cited if known is None or c in known]


def strip_citations(text: str) -> str:
    """The text without its citation brackets, for language detection and overlap scores."""
    return re.sub(r"\s{2,}", " ", _CITATION.sub("", text)).strip()
