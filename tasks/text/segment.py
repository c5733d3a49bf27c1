"""Word tokens for indexing and truncation, chosen by each language's rule.

BM25 and the CLIRMatrix truncation rule both count words, and what a word is
depends on the script: space-separated scripts split on a Unicode-aware word
pattern, while Chinese, Japanese and Thai need dictionary segmenters. Those
segmenters load dictionaries that take a second or more, so each is imported
only when a language needs it and built once per process.

Tokens come with their offsets in the original text, so that truncation can cut
the text itself after the N-th word and keep its own spacing and punctuation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache

import regex

from tasks.errors import ConfigError
from tasks.text.languages import rule_for

logger = logging.getLogger(__name__)

Span = tuple[int, int]
SpanFinder = Callable[[str], Iterator[Span]]

# Letters, combining marks (Indic vowel signs and viramas are marks, so they
# must not split a word) and digits; an apostrophe joins word characters
# ("l'homme", "don't") and a point or comma joins digits ("3.14", "1,000"), as
# Unicode word segmentation (UAX #29) does.
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:(?:['’]|(?<=\p{N})[.,](?=\p{N}))[\p{L}\p{M}\p{N}]+)*")
# Segmenters also return punctuation and spaces as pieces; only pieces with a
# letter or digit are words.
_WORDLIKE = regex.compile(r"[\p{L}\p{N}]")


_WORD_CHARS = r"\p{L}\p{M}\p{N}"


@lru_cache(maxsize=8)
def _words_prefix(count: int) -> regex.Pattern[str]:
    """Matches from the start of a text through the end of its ``count``-th word.

    Words are atomic and the separators between them possessive, so the match
    walks the same (separator, word) sequence as ``_WORD.finditer`` without
    ever backtracking into a word: one C-level match instead of a Python loop
    over ``count`` match objects, which is what makes truncating a corpus cheap.
    """
    word = f"(?>{_WORD.pattern})"
    return regex.compile(f"[^{_WORD_CHARS}]*+(?:{word}[^{_WORD_CHARS}]*+){{{count - 1}}}{word}")


def end_of_word(text: str, count: int) -> int | None:
    """Offset just after the ``count``-th whitespace-script word of ``text``, or None when it has fewer."""
    match = _words_prefix(count).match(text)
    return match.end() if match else None


def _regex_spans(text: str) -> Iterator[Span]:
    return (match.span() for match in _WORD.finditer(text))


def _aligned(text: str, pieces: Iterable[str]) -> Iterator[Span]:
    """Offsets of a segmenter's pieces, which it returns as bare strings.

    Pieces come in text order, so each is searched from the end of the previous
    one; a piece the segmenter altered cannot be found and is not a word of
    this text.
    """
    cursor = 0
    for piece in pieces:
        start = text.find(piece, cursor)
        if start < 0 or not _WORDLIKE.search(piece):
            continue
        cursor = start + len(piece)
        yield start, cursor


def _jieba() -> SpanFinder:
    import jieba

    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading chatter is not an operator message
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()

    def spans(text: str) -> Iterator[Span]:
        return ((start, end) for word, start, end in tokenizer.tokenize(text) if _WORDLIKE.search(word))

    return spans


def _fugashi() -> SpanFinder:
    import fugashi

    tagger = fugashi.Tagger()  # finds the unidic-lite dictionary installed with the package

    def spans(text: str) -> Iterator[Span]:
        # Nodes point into the tagger's buffer, which the next call reuses: copy the surfaces now.
        return _aligned(text, [node.surface for node in tagger(text)])

    return spans


def _pythainlp() -> SpanFinder:
    from pythainlp.tokenize import word_tokenize

    def spans(text: str) -> Iterator[Span]:
        return _aligned(text, word_tokenize(text, engine="newmm", keep_whitespace=False))

    return spans


_LOADERS: dict[str, Callable[[], SpanFinder]] = {"jieba": _jieba, "fugashi": _fugashi, "pythainlp": _pythainlp}


@lru_cache(maxsize=None)
def _segmenter(name: str) -> SpanFinder:
    if name == "whitespace":
        return _regex_spans
    try:
        loader = _LOADERS[name]
    except KeyError:
        raise ConfigError(f"unknown segmenter {name!r} in the language rules (known: whitespace, {', '.join(_LOADERS)})") from None
    logger.info("loading the %s segmenter", name)
    return loader()


def token_spans(text: str, lang: str) -> Iterator[Span]:
    """(start, end) offsets of the words of ``text``, in order, lazily where the segmenter allows."""
    return _segmenter(rule_for(lang).segmenter)(text)


def tokenize(text: str, lang: str) -> list[str]:
    """The words of ``text`` for indexing and truncation; punctuation and spaces are not tokens."""
    return [text[start:end] for start, end in token_spans(text, lang)]
