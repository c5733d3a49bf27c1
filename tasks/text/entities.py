"""Named entities as Wikipedia knows them: article titles found in text, keyed by Wikidata QID.

A wiki's article titles (and redirect titles) are a gazetteer of its named
entities, and the QID behind each title says which entity it is in every
language.  That is what both XRAG pairing (articles that mention the same
entities) and the translation gate (entities kept in a translation) need, with
no NER model to download.  Matching is Aho–Corasick (``pyahocorasick``) over
the surface forms, longest match first; in space-separated scripts a match
must start and end at word boundaries, so "Tarsk" does not match inside
"Tarskian".
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

import ahocorasick

from tasks.text.languages import rule_for

MIN_FORM_CHARS = 3  # shorter titles ("Io", "Ur") match inside too many words to be evidence
Key = TypeVar("Key", bound=Hashable)
_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")


def surface_forms(title: str) -> set[str]:
    """A title and its base name without a trailing qualifier: "Mirra (river)" → {"Mirra (river)", "Mirra"}."""
    forms = {title.strip()}
    base = _QUALIFIER.sub("", title).strip()
    if base:
        forms.add(base)
    return {form for form in forms if len(form) >= MIN_FORM_CHARS}


class EntityMatcher(Generic[Key]):
    """Finds the entities of a name → key mapping in texts of one language (keys: QIDs, or their integer codes)."""

    def __init__(self, names: Mapping[str, Key], lang: str) -> None:
        self._automaton = ahocorasick.Automaton()
        for form, key in names.items():
            self._automaton.add_word(form, (len(form), key))
        self._empty = not names
        if not self._empty:
            self._automaton.make_automaton()
        self._boundaries = not rule_for(lang).needs_segmentation

    def find(self, text: str) -> dict[Key, set[str]]:
        """key → the surface forms found; overlapping matches keep the longest (then the leftmost)."""
        if self._empty:
            return {}
        matches = []
        for end, (length, key) in self._automaton.iter(text):
            start = end - length + 1
            if self._boundaries and not _at_word_boundaries(text, start, end + 1):
                continue
            matches.append((start, end + 1, key))
        matches.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
        # The matches kept so far, disjoint and in text order: a new one overlaps a kept one only if it overlaps
        # its neighbour on either side, so each is checked in log time (an article has hundreds of matches).
        starts: list[int] = []
        stops: list[int] = []
        found: dict[Key, set[str]] = {}
        for start, stop, key in matches:
            at = bisect_right(starts, start)
            if (at and stops[at - 1] > start) or (at < len(starts) and starts[at] < stop):
                continue
            starts.insert(at, start)
            stops.insert(at, stop)
            found.setdefault(key, set()).add(text[start:stop])
        return found


def _at_word_boundaries(text: str, start: int, stop: int) -> bool:
    before = text[start - 1] if start > 0 else " "
    after = text[stop] if stop < len(text) else " "
    return not (before.isalnum() or after.isalnum())


def title_names(rows: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """Surface form → QID from (title, qid) rows; a form shared by two entities is ambiguous and left out."""
    names: dict[str, str] = {}
    ambiguous: set[str] = set()
    for title, qid in rows:
        if qid is None:
            continue
        for form in surface_forms(title):
            if names.get(form, qid) != qid:
                ambiguous.add(form)
            names[form] = qid
    return {form: qid for form, qid in names.items() if form not in ambiguous}
