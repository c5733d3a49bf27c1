"""Word tokens for indexing and truncation, chosen by each language's rule.

BM25 and the CLIRMatrix truncation rule both count words, and what a word is
depends on the script: space-separated scripts split on a Unicode-aware word
pattern, while scripts written without spaces need dictionary segmenters —
jieba for Chinese (its words, mostly computed by jieba-rs, see ``_jieba``)
and fugashi (MeCab with UniDic) for Japanese, which know those languages'
words better than a general dictionary, and ICU's word break
for every other unspaced script (Thai, Lao, Khmer, Burmese, Tibetan, …): one
library maintained with Unicode's rules and dictionaries, so a language of
those scripts needs a rule row and no code. Segmenters are imported only when
a language needs them and built once per process (jieba and fugashi load
dictionaries that take a second or more).

Known limit of ICU: it has no Tibetan dictionary, so Tibetan splits at every
tsheg (the syllable mark), and a word of several syllables (བོད་ཡིག, "Tibetan
script") comes out as its syllables.

Tokens come with their offsets in the original text, so that truncation can cut
the text itself after the N-th word and keep its own spacing and punctuation.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import accumulate

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
# Characters outside the Basic Multilingual Plane: two UTF-16 code units each.
_ASTRAL = regex.compile(r"[\U00010000-\U0010FFFF]")


_WORD_CHARS = r"\p{L}\p{M}\p{N}"


def _latin1_word() -> re.Pattern[str]:
    """``_WORD`` for text of Latin-1 characters only, in the standard library's ``re``.

    Most text in Western European languages is Latin-1. There ``re``'s
    classes are byte tables and find the same words ~2.5× faster than
    ``regex``'s Unicode properties; the classes are ``_WORD``'s own, asked of
    the 256 characters (no mark is Latin-1, nor is the curly apostrophe).
    """
    chars = list(map(chr, range(256)))
    word = "".join(map(re.escape, filter(regex.compile(f"[{_WORD_CHARS}]").fullmatch, chars)))
    digit = "".join(map(re.escape, filter(regex.compile(r"\p{N}").fullmatch, chars)))
    return re.compile(f"[{word}]+(?:(?:'|(?<=[{digit}])[.,](?=[{digit}]))[{word}]+)*")


_LATIN1_WORD = _latin1_word()
_BEYOND_LATIN1 = re.compile(r"[^\x00-\xff]")


def _is_latin1(text: str) -> bool:
    return text.isascii() or not _BEYOND_LATIN1.search(text)


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


# The blocks of jieba's that jieba-rs segments exactly as jieba does: Han characters, ASCII letters and digits.
_RUST_BLOCK = regex.compile(r"[\u4E00-\u9FD5a-zA-Z0-9]+")


def _consecutive(pieces: list[str], start: int) -> Iterator[Span]:
    """The spans of ``pieces`` laid end to end from offset ``start`` (a segmenter's pieces cover its block)."""
    ends = list(accumulate(map(len, pieces), initial=start))
    return zip(ends, ends[1:])


Block = tuple[str, list[str], bool]  # a block of text, its pieces laid end to end, whether every piece is a word


@lru_cache(maxsize=1)
def _jieba_blocks() -> Callable[[str], Iterator[Block]]:
    """jieba's segmentation, computed by jieba-rs (rjieba, ~9× faster) wherever the two agree.

    jieba cuts a text into blocks (runs of its ``re_han_default`` pattern, and
    the stretches between them) and segments each block on its own: a route
    through the dictionary's words, an HMM for runs of unknown characters.
    jieba-rs runs the same algorithm on the same dictionary and model in Rust,
    but splits a block holding ``.``, ``-`` or ``%`` its own way (it keeps
    ``www.mediawiki.org`` whole, jieba splits it) and draws its blocks with
    more Han ranges. So each jieba block of Han characters, ASCII letters and
    digits only goes to jieba-rs, every other block to jieba itself: jieba's
    words exactly (``tests/text/test_segment_jieba.py`` compares them on large,
    varied inputs), at jieba-rs's speed on ordinary Chinese text. Offsets are
    counted as jieba's ``tokenize`` counts them, word lengths one after another;
    :func:`tokenize` takes the words themselves (:func:`_jieba_words`).
    """
    import jieba
    import rjieba

    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading chatter is not an operator message
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    rust = rjieba.Jieba()

    def blocks(text: str) -> Iterator[Block]:
        for block in jieba.re_han_default.split(text):
            if _RUST_BLOCK.fullmatch(block):  # each of its pieces holds a letter or digit: a word
                yield block, rust.cut(block), True
            elif _WORDLIKE.search(block):  # (a block without a letter or digit has no word in it)
                yield block, list(tokenizer.cut(block)), False
            else:
                yield block, [], True

    return blocks


def _jieba() -> SpanFinder:
    """The offsets of jieba's words (see :func:`_jieba_blocks`)."""
    blocks = _jieba_blocks()

    def spans(text: str) -> Iterator[Span]:
        found: list[Span] = []
        start = 0
        for block, pieces, all_words in blocks(text):
            laid = _consecutive(pieces, start)
            found.extend(laid if all_words else (span for piece, span in zip(pieces, laid) if _WORDLIKE.search(piece)))
            start += len(block)
        return iter(found)

    return spans


def _jieba_words(text: str) -> list[str]:
    """jieba's words of ``text`` themselves, without their offsets (see :func:`_jieba_blocks`)."""
    found: list[str] = []
    for _block, pieces, all_words in _jieba_blocks()(text):
        found.extend(pieces if all_words else filter(_WORDLIKE.search, pieces))
    return found


def _fugashi() -> SpanFinder:
    import fugashi

    tagger = fugashi.Tagger()  # finds the unidic-lite dictionary installed with the package

    def spans(text: str) -> Iterator[Span]:
        # Nodes point into the tagger's buffer, which the next call reuses: copy the surfaces now.
        return _aligned(text, [node.surface for node in tagger(text)])

    return spans


def _from_utf16(text: str, spans: list[Span]) -> list[Span]:
    """Spans in UTF-16 code units (ICU's offsets) as offsets into the Python string.

    Each character outside the BMP takes two code units and one string
    position, so an offset moves back by the number of such characters before
    it. ICU never breaks inside a surrogate pair, so every offset is at a
    character boundary.
    """
    # the UTF-16 offset of each astral character: its string offset plus one per astral character before it
    astral = [match.start() + before for before, match in enumerate(_ASTRAL.finditer(text))]
    if not astral:
        return spans

    def at(unit: int) -> int:
        return unit - bisect_left(astral, unit)

    return [(at(start), at(end)) for start, end in spans]


def _icu(tag: str) -> SpanFinder:
    """ICU's word break for one language tag: Unicode's word rules plus ICU's dictionaries.

    The iterator is built once per process and language and reused, and a
    BreakIterator is not thread-safe: call it from one thread (the pipeline's
    Dask workers run one thread each). Each call walks the whole text before
    returning, so interleaving two calls' results in one thread is safe.

    A piece is a word when ICU's rule status says so (``UBRK_WORD_NONE`` is
    0-99; numbers, letters, kana and ideographs are 100 and up), rather than
    when it holds a letter or digit (``_WORDLIKE``): ICU has classified every
    piece already, with the dictionary's view of Thai or Khmer words, and
    spaces, punctuation and the Tibetan tsheg come out as non-words either way.
    """
    import icu

    breaks = icu.BreakIterator.createWordInstance(icu.Locale.forLanguageTag(tag))
    status, words_from = breaks.getRuleStatus, icu.UWordBreak.NONE_LIMIT

    def spans(text: str) -> Iterator[Span]:
        breaks.setText(text)
        found: list[Span] = []
        start = breaks.first()
        for end in breaks:
            if status() >= words_from:
                found.append((start, end))
            start = end
        return iter(_from_utf16(text, found))

    return spans


# Segmenters built once per process, and those built once per language tag.
_LOADERS: dict[str, Callable[[], SpanFinder]] = {"jieba": _jieba, "fugashi": _fugashi}
_TAG_LOADERS: dict[str, Callable[[str], SpanFinder]] = {"icu": _icu}
# Segmenters that give their words without offsets faster than the words can be cut out at their offsets.
_WORD_FINDERS: dict[str, Callable[[str], list[str]]] = {"jieba": _jieba_words}


@lru_cache(maxsize=None)
def _segmenter(name: str, tag: str | None) -> SpanFinder:
    """One segmenter per name, and per language tag for the ``_TAG_LOADERS`` ones (``tag`` None for the others)."""
    if name == "whitespace":
        return _regex_spans
    if tag is not None:
        logger.info("loading the %s segmenter for %s", name, tag)
        return _TAG_LOADERS[name](tag)
    try:
        loader = _LOADERS[name]
    except KeyError:
        known = ", ".join(["whitespace", *_LOADERS, *_TAG_LOADERS])
        raise ConfigError(f"unknown segmenter {name!r} in the language rules (known: {known})") from None
    logger.info("loading the %s segmenter", name)
    return loader()


def segmenter(name: str, tag: str) -> SpanFinder:
    """The word finder a rule names (``whitespace``, ``jieba``, ``fugashi``, ``icu``) for language tag ``tag``.

    Only ICU's depends on the language, so only ICU gets one per tag; jieba
    and fugashi are shared by every language that names them.
    """
    return _segmenter(name, tag if name in _TAG_LOADERS else None)


def token_spans(text: str, lang: str) -> Iterator[Span]:
    """(start, end) offsets of the words of ``text``, in order, lazily where the segmenter allows."""
    rule = rule_for(lang)
    return segmenter(rule.segmenter, rule.bcp47)(text)


def tokenize(text: str, lang: str) -> list[str]:
    """The words of ``text`` for indexing and truncation; punctuation and spaces are not tokens.

    Spaced scripts take the word pattern's ``findall`` (the same words as its
    spans, without building a match object per word: about 2.5× faster),
    Latin-1 text through ``_LATIN1_WORD``; jieba gives its words directly.
    """
    segmenter_name = rule_for(lang).segmenter
    if segmenter_name == "whitespace":
        return (_LATIN1_WORD if _is_latin1(text) else _WORD).findall(text)
    if segmenter_name in _WORD_FINDERS:
        return _WORD_FINDERS[segmenter_name](text)
    return [text[start:end] for start, end in token_spans(text, lang)]


def lowered_words(text: str, lang: str) -> list[str]:
    """``tokenize(text, lang)``, each word lower-cased.

    A spaced script's Latin-1 text is lowered whole before its words are
    found: its lowercase maps each character to one Latin-1 character of the
    same class, so the words are the same, for one call instead of one a word.
    """
    if rule_for(lang).segmenter == "whitespace" and _is_latin1(text):
        return _LATIN1_WORD.findall(text.lower())
    return list(map(str.lower, tokenize(text, lang)))
