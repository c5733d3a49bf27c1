"""Sentence splitting by sentencex, Wikimedia's rule-based sentence segmenter.

sentencex is given the primary subtag of the language's BCP 47 tag (its codes are MediaWiki's, and a
private-use tag would find no fallback chain), and each line is segmented alone, since dump text ends
headings and list items with a line break, not punctuation.  Its known misses (Khmer, Tibetan, Burmese,
Thai, some abbreviations) are left as they are.

See ``docs/languages.md``, "Sentences".
"""

from __future__ import annotations

from sentencex import segment

from tasks.text.languages import rule_for


def _sentencex_code(lang: str) -> str:
    """The language code sentencex is given for ``lang`` (see the module notes)."""
    return rule_for(lang).bcp47.split("-")[0].lower()


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of ``text``, each stripped and with its terminator (and closing quotes) attached."""
    code = _sentencex_code(lang)
    return [stripped for line in text.splitlines() for sentence in segment(code, line)
            if (stripped := sentence.strip())]
