"""The CLIRMatrix token cut: the ASCII fast path cuts exactly where the general Unicode path does."""

from __future__ import annotations

import itertools
import random
from itertools import islice

import pytest

from tasks.text.segment import token_spans
from tasks.text.truncate import _cut_ascii_words, _cut_words, _narrowed_to_ascii, truncate

LIMIT = 200  # the token limit of every space-separated language rule


def by_spans(text: str, limit: int) -> str:
    """The cut as first written: count the word spans one by one (an oracle independent of both paths)."""
    spans = list(islice(token_spans(text, "en"), limit + 1))
    return text if len(spans) <= limit else text[: spans[limit - 1][1]]


def both_paths(text: str, limit: int) -> str:
    """The cut of an ASCII text, after checking that the fast path, the general path and the oracle agree."""
    fast, general = _cut_ascii_words(text, limit), _cut_words(text, limit)
    assert fast == general == by_spans(text, limit), (text, limit)
    return fast


# -- hand-made cases, expected values worked out by hand -----------------------------------------
@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        # Words: Hello | world | It's (apostrophe joins) | 3.14 (point between digits joins) | o'clock.
        ("Hello, world! It's 3.14 o'clock.", 1, "Hello"),
        ("Hello, world! It's 3.14 o'clock.", 3, "Hello, world! It's"),
        ("Hello, world! It's 3.14 o'clock.", 4, "Hello, world! It's 3.14"),
        ("Hello, world! It's 3.14 o'clock.", 5, "Hello, world! It's 3.14 o'clock."),  # 5 words: whole, full stop kept
        ("1,000 a.b c", 2, "1,000 a"),  # a point between letters does not join: a | b
        ("x''y z", 1, "x"),  # two apostrophes do not join: x | y | z
        ("don't' stop", 1, "don't"),
        ("3.x 4,", 1, "3"),  # a point joins digits only: 3 | x | 4
        ("  tab\tsep\n\nlines  ", 2, "  tab\tsep"),  # leading and inner whitespace runs are kept
        ("  tab\tsep\n\nlines  ", 3, "  tab\tsep\n\nlines  "),
        ("... !!! --", 1, "... !!! --"),  # no word at all
        ("", 1, ""),
    ],
)
def test_ascii_cuts_worked_out_by_hand(text: str, limit: int, expected: str) -> None:
    assert both_paths(text, limit) == expected


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Café crème brûlée.", 2, "Café crème"),
        ("Привет, мир! Как дела?", 2, "Привет, мир"),
        ("naïve café’s 2,5 km", 3, "naïve café’s 2,5"),  # the typographic apostrophe joins too
    ],
)
def test_non_ascii_cuts_worked_out_by_hand(text: str, limit: int, expected: str) -> None:
    assert _cut_words(text, limit) == by_spans(text, limit) == expected


def test_english_rule_cuts_after_200_words() -> None:
    assert truncate("word " * 201, "en") == "word " * 199 + "word"
    assert truncate("word " * 200, "en") == "word " * 200  # 200 words: nothing to cut, trailing space kept


def test_joined_words_are_counted_once_although_they_are_two_runs() -> None:
    # 400 runs of letters, but "it's" is one word: 200 words stay whole, the 201st is cut off.
    assert truncate(" ".join(["it's"] * 200), "en") == " ".join(["it's"] * 200)
    assert truncate(" ".join(["it's"] * 201) + ".", "en") == " ".join(["it's"] * 200)
    assert truncate("1,000.5 " * 201, "en") == "1,000.5 " * 199 + "1,000.5"


# -- equivalence on generated inputs -------------------------------------------------------------
def test_every_short_ascii_string_is_cut_alike() -> None:
    """All strings of up to 5 characters over word characters, joiners and separators, for small limits."""
    alphabet = "a7'., -\t"
    for length in range(6):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            for limit in (1, 2, 3):
                both_paths(text, limit)


ASCII_PIECES = ["the", "Word", "x", "42", "3.14", "1,000", "it's", "o'clock", "'quoted'", "a.b", "e-mail", "C++",
                "(note)", "end.", ",", ";", "--", "...", "!", "?", "\"", "#1", "_", "2.", ".5", "1,", "a,b", "''"]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\n\n", " - ", "", ", ", ". "]


def random_ascii_text(rng: random.Random, words: int) -> str:
    return "".join(rng.choice(ASCII_PIECES) + rng.choice(SEPARATORS) for _ in range(words))


def test_random_ascii_texts_around_the_limit_are_cut_alike() -> None:
    rng = random.Random(2024)
    for _ in range(600):
        text = random_ascii_text(rng, rng.randint(0, 320))
        assert truncate(text, "en") == both_paths(text, LIMIT)


def test_random_bytes_of_every_ascii_character_are_cut_alike() -> None:
    rng = random.Random(31)
    ascii_chars = [chr(code) for code in range(128)]
    for _ in range(300):
        text = "".join(rng.choices(ascii_chars, k=rng.randint(0, 1500)))
        for limit in (1, 17, LIMIT):
            both_paths(text, limit)


def test_long_ascii_texts_are_cut_alike() -> None:
    """Texts longer than the run-counting bound: few long words (nothing to cut) and many words (a cut)."""
    rng = random.Random(8)
    for _ in range(40):
        few_long_words = " ".join("w" * rng.randint(10, 40) for _ in range(rng.randint(150, 200)))
        many_words = random_ascii_text(rng, rng.randint(2_000, 5_000))
        assert both_paths(few_long_words, LIMIT) == few_long_words
        assert len(both_paths(many_words, LIMIT)) < len(many_words)


NON_ASCII_PIECES = ["Straße", "café", "brûlée", "naïve", "l’homme", "Привет", "мир", "Київ", "Αθήνα", "नमस्ते",
                    "গান", "—", "«", "»", "…", "２０", "³"]


def test_non_ascii_texts_take_the_general_path() -> None:
    """Latin with accents, Cyrillic and mixed texts: ``truncate`` cuts them like the general path and the oracle."""
    rng = random.Random(99)
    for _ in range(300):
        pieces = ASCII_PIECES + NON_ASCII_PIECES
        text = "".join(rng.choice(pieces) + rng.choice(SEPARATORS) for _ in range(rng.randint(0, 320)))
        for lang in ("en", "fr", "ru"):
            assert truncate(text, lang) == _cut_words(text, LIMIT) == by_spans(text, LIMIT)


def test_a_word_pattern_property_without_ascii_narrowing_is_refused() -> None:
    with pytest.raises(RuntimeError, match="ASCII narrowing"):
        _narrowed_to_ascii(r"[\p{Lu}]+")


# -- a block of texts at once (index builds) ----------------------------------------------------
def _block_texts(rng: random.Random) -> list[str]:
    """Texts short and long, ASCII and not, with every kind of joiner and separator, and around the byte bound of the
    run count (16 bytes per allowed word)."""
    pieces = ["word", "x", "42", "3.14", "1,000", "it's", "a.b", "--", ",", ". ", "  ", "\t", "\n", "'q'", "é", "Straße",
              "नमस्ते", "字", "Привет", "don’t", "", "\u00a0", "😀"]
    texts = ["", " ", "plain words only", "a" * 3_200, "a " * 200, "a " * 201, ("ab " * 1_067)[:3_200],
             "é " * 250, "Привет " * 210, "x" + "é" * 3 + "y " * 150]  # more words than ASCII runs
    for _ in range(120):
        texts.append(" ".join(rng.choice(pieces) for _ in range(rng.choice([0, 3, 150, 199, 200, 201, 240, 900]))))
    return texts


def test_a_block_is_cut_as_each_of_its_texts_is_in_every_language_of_the_table() -> None:
    """``truncated`` (a block, its short-text test compiled) equals ``truncate`` text by text, for every language
    rule: space-separated, character-cut and segmented scripts alike; a sliced block too."""
    import pyarrow as pa

    from tasks.text.languages import all_rules
    from tasks.text.truncate_block import truncated

    texts = _block_texts(random.Random(11))
    block = pa.array(["skipped", *texts], pa.large_string())[1:]
    for lang in sorted(all_rules()):
        assert truncated(block, lang).to_pylist() == [truncate(text, lang) for text in texts], lang


def test_a_block_of_short_ascii_texts_comes_back_as_it_was() -> None:
    """Nothing to cut: the block itself is returned (no text went through Python); one long text is cut alone."""
    import pyarrow as pa

    from tasks.text.truncate_block import truncated

    block = pa.array(["a b c", "1,000 it's", ""], pa.large_string())
    assert truncated(block, "en") is block
    longer = pa.array(["a b c", "w " * 250], pa.large_string())
    assert truncated(longer, "en").to_pylist() == ["a b c", "w " * 199 + "w"]
