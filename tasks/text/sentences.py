"""Sentence splitting from each language's terminator characters.

The rule table says which characters end a sentence; how they are used is
decided here by script:

- In space-separated scripts a terminator ends a sentence only when a space
  or the end of the text follows (after any closing quotes or brackets), so
  "3.14", "e.g." inside a word or "www.example.org" do not split.
- Full-width CJK terminators, whitespace terminators (Thai separates sentences
  with a space) and every terminator of a language that needs word
  segmentation end a sentence at once: those scripts put no space after them.
- A run of terminators ("?!", "...", "！？") is one boundary; closing quotes
  and brackets that follow stay with the sentence they close.
- A line break always ends a sentence: dump text keeps headings and list items
  on their own lines without final punctuation.
- Full stops (one, or an ellipsis) followed by a lower-case word do not end a
  sentence; nor does a single full stop after a common abbreviation (titles
  such as "Dr.", Latin "e.g.", "etc.") or a single letter (initials "J. R.
  R.", "U.S."). Known misses: a sentence that ends with an abbreviation or a
  single letter ("... and so did I. Then") stays joined to the next one, and
  German ordinals ("am 3. Mai") split.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from tasks.text.languages import rule_for

_CLOSERS = "\"'”’»)]}」』）】〕〉》"
# Abbreviations that are followed by a capitalised word mid-sentence in the
# Latin- and Cyrillic-script languages of the rule table, case-folded, without
# their final full stop.
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "sra", "srta", "dra", "mme", "mlle", "mgr",
        "sig", "sig.ra", "dott", "hr", "vs", "etc", "e.g", "i.e", "cf", "al", "fig", "no", "nr",
        "vol", "pp", "ca", "approx", "inc", "ltd", "co", "corp", "mt", "gen", "col", "lt", "sgt",
        "rev", "z.b", "u.a", "d.h", "bzw", "usw", "vgl", "ggf", "ecc", "pág", "núm",
        "т.е", "т.д", "т.п", "им", "ул", "гг", "др",
    }
)
_WORD_BEFORE = re.compile(r"(\w+(?:\.\w+)*)$")
_NEXT_VISIBLE = re.compile(r"\s*(\S)")


def _is_wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


@lru_cache(maxsize=None)
def _boundary(terminators: str, unspaced_script: bool) -> re.Pattern[str]:
    """One pattern per terminator set: immediate boundaries, spaced boundaries, line breaks."""
    immediate = "".join(c for c in terminators if unspaced_script or _is_wide(c) or c.isspace())
    spaced = "".join(c for c in terminators if c not in immediate)
    closers = f"[{re.escape(_CLOSERS)}]*"
    alternatives = []
    if immediate:
        alternatives.append(f"[{re.escape(terminators)}]*[{re.escape(immediate)}][{re.escape(terminators)}]*{closers}")
    if spaced:
        alternatives.append(f"[{re.escape(spaced)}]+{closers}(?=\\s|$)")
    alternatives.append("\n")
    return re.compile("|".join(alternatives))


def _continues(text: str, stop: str, at: int) -> bool:
    """Whether full stops ``stop`` at offset ``at`` leave the sentence open (see the module notes)."""
    following = _NEXT_VISIBLE.match(text, at + len(stop))
    if following is not None and following.group(1).islower():
        return True
    word = _WORD_BEFORE.search(text, max(0, at - 40), at) if stop == "." else None
    if word is None:
        return False
    key = word.group(1).casefold()
    return key in _ABBREVIATIONS or all(len(part) == 1 and part.isalpha() for part in key.split("."))


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of ``text``, each stripped and with its terminator (and closing quotes) attached."""
    rule = rule_for(lang)
    sentences: list[str] = []
    start = 0
    for match in _boundary(rule.sentence_terminators, rule.needs_segmentation).finditer(text):
        stop = match.group().rstrip(_CLOSERS)
        if stop and set(stop) == {"."} and _continues(text, stop, match.start()):
            continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
