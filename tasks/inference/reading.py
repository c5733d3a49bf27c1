"""Reading model responses: the answer section and the cited document ids, whatever shape the reply has.

Models asked for ``##Reason: … ##Answer: …`` write it as ``## Answer:``,
``**Answer:**``, ``Answer:``, a heading on its own line, or leave the marker
out; citations come as ``[id]``, ``[id1, id2]``, ``[id1][id2]`` or
``[id1; id2]``.  The readers accept all of these and nothing that only looks
similar: a markdown link ``[text](url)``, a judge verdict ``[[A]]`` or an
editorial ``[citation needed]`` is not a citation.
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
# One id: letters, digits and the separators ids use (36897421#2, en:41020, doc-3, 12_4), no spaces.
_ID = r"[\w][\w#:.\-/]*"
_CITATION = re.compile(rf"(?<!\[)\[\s*({_ID}(?:\s*[,;]\s*{_ID})*)\s*\](?!\(|\])")


def answer_section(text: str) -> str:
    """The text after the last answer marker, or the whole reply (stripped) when it has none."""
    markers = list(_ANSWER.finditer(text))
    answer = text[markers[-1].end():] if markers else text
    return answer.strip().strip("*_").strip()


def reason_section(text: str) -> str | None:
    """The text between the reason marker and the answer marker, or None without a reason marker."""
    reason = _REASON.search(text)
    if reason is None:
        return None
    answer = _ANSWER.search(text, reason.end())
    return text[reason.end(): answer.start() if answer else len(text)].strip().strip("*_").strip()


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
