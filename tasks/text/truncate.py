"""The CLIRMatrix length rule: documents are cut before indexing.

CLIRMatrix indexed only the beginning of each article (about 600 characters
for scripts without spaces, about 200 tokens otherwise); the limits come from
the language rule so every stage cuts documents the same way.
"""

from __future__ import annotations

from itertools import islice

from tasks.errors import ConfigError
from tasks.text.languages import rule_for
from tasks.text.segment import _WORDLIKE, end_of_word, token_spans


def truncate(text: str, lang: str) -> str:
    """The first ``truncate_limit`` characters or tokens of ``text``.

    A token cut ends at the end of the N-th word, so the text keeps its own
    spacing and punctuation up to there; a text with at most N words is
    returned whole, trailing punctuation included.
    """
    rule = rule_for(lang)
    limit = rule.truncate_limit
    if rule.truncate_unit == "chars":
        return text[:limit]
    if rule.truncate_unit != "tokens":
        raise ConfigError(f"language rule {lang!r}: unknown truncate_unit {rule.truncate_unit!r} (chars or tokens)")
    if rule.segmenter == "whitespace":  # the hot path of indexing: one regex match
        end = end_of_word(text, limit)
        return text if end is None or not _WORDLIKE.search(text, end) else text[:end]
    spans = list(islice(token_spans(text, lang), limit + 1))
    if len(spans) <= limit:
        return text
    return text[: spans[limit - 1][1]]
