"""The verdict readers against a conformance corpus of judge replies: every form a judge writes, with the verdict a
careful reader takes from it, or ``None`` where a careful reader would refuse to guess.

The corpus is written by hand (English forms, negations, hedges, markdown, truncation) and generated (every yes/no
word of every language the MKQA, XRAG and ECLEKTIC benchmarks use, from the language table's CLDR words, in every
reply shape). Each case runs through every reader that takes that kind of verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tasks.llm.verdicts import read_checks, read_pairwise, read_yes_no
from tasks.qa.xrag_pairs import parse_related
from tasks.text.verdict_words import has_words, yes_no_words

#: MKQA's 26 locales, XRAG's languages (en, de, es, zh, ar) and ECLEKTIC's 12 (de en fr es it pt id he hi ko ja zh).
LANGUAGES = sorted({"ar", "da", "de", "en", "es", "fi", "fr", "he", "hu", "it", "ja", "km", "ko", "ms", "nl", "no",
                    "pl", "pt", "ru", "sv", "th", "tr", "vi", "zh_cn", "zh_hk", "zh_tw", "id", "hi"})

YES, NO, FAIL = True, False, None
#: (reply, expected) in English, the tag being <correct>; read as a pointwise verdict of an English question.
ENGLISH: list[tuple[str, bool | None]] = [
    # structured, as asked
    ('{"justification": "Both say 1868.", "verdict": "yes"}', YES),
    ('{"justification": "It names the viaduct.", "verdict": "no"}', NO),
    ('{"verdict": "no", "justification": "wrong year"}', NO),
    ('{"justification": "", "verdict": "YES"}', YES),
    ('{"justification": "x", "verdict": true}', YES),
    ('{"justification": "x", "verdict": false}', NO),
    ('```json\n{"justification": "Matches.", "verdict": "yes"}\n```', YES),
    ('```\n{"justification": "Does not match.", "verdict": "no"}\n```', NO),
    ('{\n  "justification": "The answer is not correct: 1870, not 1868.",\n  "verdict": "no"\n}', NO),
    ('{"justification": "Correct year, correct place.", "verdict": "yes"}\n\nQuestion: next', YES),
    ('Here is my verdict: {"justification": "Same facts.", "verdict": "yes"}', YES),
    ('{"correct": "yes"}', YES),
    ('{"Verdict": "No."}', NO),
    ('{"verdict": "correct"}', YES),
    ('{"verdict": "incorrect"}', NO),
    # structured, but not a verdict a reader may take
    ('{"justification": "The answer is right", "verdict": "not correct"}', FAIL),
    ('{"justification": "half of it", "verdict": "partly"}', FAIL),
    ('{"justification": "unsure", "verdict": "maybe"}', FAIL),
    ('{"justification": "Both say 1868."}', FAIL),
    ('{"justification": "Both say 1868.", "verdict": "', FAIL),
    ('{"justification": "Both say 18', FAIL),
    ('{"justification": "x", "verdict": 1}', FAIL),
    ('{"justification": "x", "verdict": null}', FAIL),
    ('{"justification": "Line one.\nLine two.", "verdict": "no"}', NO),  # a raw line break in a string
    ('{"justification": "x", "verdict": "yes and no"}', FAIL),
    ('["yes"]', YES),  # not an object: read as text, which is the one word
    ('```json\n{"justification": "Matches.", "verdict": ', FAIL),
    # tags
    ("<correct>yes</correct>", YES),
    ("<correct>no</correct>", NO),
    ("<correct>Yes</correct>", YES),
    ("<correct>NO</correct>", NO),
    ("<correct> yes </correct>", YES),
    ("<correct>**No**</correct>", NO),
    ("<correct>yes.</correct>", YES),
    ("The answer gives the right year. <correct>yes</correct>", YES),
    ("<correct>yes", YES),
    ("<correct>correct</correct>", YES),
    ("<correct>incorrect</correct>", NO),
    ("<correct>not correct</correct>", FAIL),
    ("<correct>The answer is not correct.</correct>", FAIL),
    ("<correct>The answer is correct.</correct>", YES),
    ("<correct>isn't right</correct>", FAIL),
    ("<correct>no, it is not</correct>", FAIL),
    ("<correct>partly correct</correct>", FAIL),
    ("<correct>mostly</correct>", FAIL),
    ("<correct>yes and no</correct>", FAIL),
    ("<correct></correct>", FAIL),
    ("<correct>ye", FAIL),
    ("<correct>n/a</correct>", FAIL),
    ("<correct>unsure</correct>", FAIL),
    # bare words
    ("yes", YES), ("no", NO), ("Yes.", YES), ("No.", NO), ("YES!", YES), ("**No**", NO), ("*yes*", YES),
    ("Yes", YES), ("  no  ", NO), ("True", YES), ("False", NO), ("Correct", YES), ("Incorrect.", NO),
    ("Wrong.", NO), ("Right.", YES), ("`yes`", YES), ('"no"', NO), ("> yes", YES),
    # prose
    ("Yes, the answer is correct.", YES),
    ("No, the answer is wrong.", NO),
    ("The given answer is correct.", YES),
    ("The given answer is incorrect.", NO),
    ("The answer matches the reference: correct.", YES),
    ("**Verdict:** yes", YES),
    ("### Verdict\nNo", NO),
    ("Verdict: no", NO),
    ("The answer is accurate.", YES),
    ("The answer is inaccurate.", NO),
    ("It is not correct.", FAIL),
    ("It isn't right.", FAIL),
    ("It isn’t right.", FAIL),
    ("The answer doesn't match the reference.", FAIL),
    ("No, it is not.", FAIL),
    ("Not correct.", FAIL),
    ("The answer is partly correct.", FAIL),
    ("Partially right.", FAIL),
    ("Probably correct.", FAIL),
    ("Maybe.", FAIL),
    ("It is somewhat accurate.", FAIL),
    ("Yes and no.", FAIL),
    ("Correct, but it is missing the year.", FAIL),
    ("Yes, however the date is wrong.", FAIL),
    ("The answer is neither correct nor incorrect.", FAIL),
    ("I cannot say.", FAIL),
    ("The answer names a different city.", FAIL),
    ("", FAIL),
    ("   ", FAIL),
    ("...", FAIL),
    ("I think so.", FAIL),
    ("It never says that.", FAIL),
    ("There is no error; the answer is correct.", FAIL),
    ("No idea.", FAIL),
    ("no mention of the year", FAIL),
    ("The answer has no correct facts.", FAIL),
    ("No the answer is wrong", FAIL),
]

#: (reply, expected side) for the pairwise judge: 'a' is the answer shown first.
PAIRWISE: list[tuple[str, str | None]] = [
    ('{"reason": "A cites the date.", "winner": "A"}', "a"),
    ('{"reason": "B is right.", "winner": "B"}', "b"),
    ('{"reason": "Both wrong.", "winner": "tie"}', "tie"),
    ('{"reason": "x", "winner": "C"}', "tie"),
    ('{"reason": "x", "winner": "Answer B"}', "b"),
    ('{"reason": "x", "winner": "Assistant A"}', "a"),
    ('{"reason": "x", "winner": "[[A]]"}', "a"),
    ('{"winner": "b", "reason": "x"}', "b"),
    ('```json\n{"reason": "x", "winner": "A"}\n```', "a"),
    ('{"reason": "x", "winner": "both"}', None),
    ('{"reason": "x", "winner": "A or B"}', None),
    ('{"reason": "x"}', None),
    ('{"reason": "A cites the', None),
    ("[[A]]", "a"), ("[[B]]", "b"), ("[[C]]", "tie"), ("[[ b ]]", "b"), ("**[[A]]**", "a"), ("[[tie]]", "tie"),
    ("A cites both passages; B cites none. [[A]]", "a"),
    ("Verdict: [[B]]", "b"),
    ("Explanation first. Final verdict: [[C]]", "tie"),
    ("[[A]] ... on reflection [[B]]", None),
    ("[[A]] and again [[A]]", "a"),
    ("Assistant A is better.", "a"),
    ("Answer B is better.", "b"),
    ("A is better.", "a"),
    ("B is clearly better because it cites the passage.", "b"),
    ("B wins.", "b"),
    ("I prefer Answer A.", "a"),
    ("The winner is B.", "b"),
    ("Both are equally good.", "tie"),
    ("They are equally bad.", "tie"),
    ("Tie.", "tie"),
    ("tie", "tie"),
    ("Neither is better.", "tie"),
    ("A", "a"), ("B.", "b"), ("C", "tie"), ("**B**", "b"),
    ("A is not better than B.", None),
    ("A isn't better.", None),
    ("A is better. B is better.", None),
    ("A is better, or it is a tie.", None),
    ("Both answers cite passages.", None),
    ("", None),
    ("The first one.", None),
]


def _generated() -> list[tuple[str, str, bool | None]]:
    """(language, reply, expected): every yes/no word of the language in every reply shape."""
    cases = []
    for lang in LANGUAGES:
        yes, no = yes_no_words(lang)
        for words, expected in ((yes, YES), (no, NO)):
            for word in sorted(words):
                cases += [(lang, word, expected), (lang, f"<correct>{word}</correct>", expected),
                          (lang, json.dumps({"justification": "…", "verdict": word}, ensure_ascii=False), expected),
                          (lang, f"**{word.capitalize()}.**", expected)]
    return cases


def test_every_benchmark_language_has_its_own_yes_and_no_words() -> None:
    missing = [lang for lang in LANGUAGES if not has_words(lang)]
    assert not missing
    # spot checks against known translations (CLDR's POSIX yesstr/nostr and everyday forms)
    assert {"はい"} <= yes_no_words("ja")[0] and {"いいえ"} <= yes_no_words("ja")[1]
    assert {"ja"} <= yes_no_words("de")[0] and {"nein"} <= yes_no_words("de")[1]
    assert {"sí", "si"} <= yes_no_words("es")[0]
    assert {"បាទ", "ចាស"} <= yes_no_words("km")[0] and {"ទេ"} <= yes_no_words("km")[1]
    assert {"是", "對"} <= yes_no_words("zh_tw")[0] and {"否", "不是"} <= yes_no_words("zh_cn")[1]
    assert "yes" in yes_no_words("km")[0]  # English is read in every language
    # single-letter POSIX abbreviations ("y", "n", "j") are not words a judge's verdict is read by
    assert not {"y", "n", "j", "s"} & (yes_no_words("de")[0] | yes_no_words("de")[1] | yes_no_words("es")[0])


@pytest.mark.parametrize(("reply", "expected"), ENGLISH)
def test_a_pointwise_reply_is_read_as_a_careful_reader_would(reply: str, expected: bool | None) -> None:
    for tag in ("correct", "supported", "answers"):
        parsed = read_yes_no(reply.replace("correct>", f"{tag}>"), "en", tag=tag)
        assert (parsed.value.value if parsed.ok else None) == expected, (tag, parsed.reason)
        assert parsed.ok or parsed.status == "parse_failed" and parsed.reason
    related = parse_related(reply.replace("correct>", "related>"), "en")
    assert (related.value.value if related.ok else None) == expected


def test_the_pointwise_corpus_in_every_language(generated_cases: Callable[[int], None]) -> None:
    cases = [(lang, reply, expected) for lang in LANGUAGES for reply, expected in ENGLISH] + _generated()
    wrong = []
    for lang, reply, expected in cases:
        parsed = read_yes_no(reply, lang, tag="correct")
        if (parsed.value.value if parsed.ok else None) != expected:
            wrong.append((lang, reply, expected, parsed.reason))
    assert not wrong, wrong[:10]
    assert len(cases) >= 300
    generated_cases(len(cases))


def test_a_reply_in_the_question_s_language_is_a_verdict_and_english_ones_still_count() -> None:
    assert read_yes_no("<correct>ja</correct>", "de", tag="correct").value.value is True
    assert read_yes_no("<correct>はい</correct>", "ja", tag="correct").value.value is True
    assert read_yes_no('{"justification": "違う", "verdict": "いいえ"}', "ja").value.value is False
    assert read_yes_no("<correct>no</correct>", "ja", tag="correct").value.value is False
    # a word of another language is not read: "ja" to a French question is not a verdict
    assert read_yes_no("<correct>ja</correct>", "fr", tag="correct").status == "parse_failed"


def test_the_justification_is_kept_with_the_verdict() -> None:
    parsed = read_yes_no('{"justification": "Both give 96 km.", "verdict": "yes"}', "en")
    assert parsed.value.justification == "Both give 96 km."
    assert read_yes_no("<correct>yes</correct>", "en", tag="correct").value.justification is None


@pytest.mark.parametrize(("reply", "expected"), PAIRWISE)
def test_a_pairwise_reply_is_read_as_a_careful_reader_would(reply: str, expected: str | None) -> None:
    parsed = read_pairwise(reply)
    assert (parsed.value.value if parsed.ok else None) == expected, parsed.reason


def test_the_pairwise_corpus_counts(generated_cases: Callable[[int], None]) -> None:
    assert len(PAIRWISE) >= 45
    generated_cases(len(PAIRWISE))


QC_LABELS = {"natural": "natural", "answerable": "answerable", "answer_correct": "correct"}


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"justification": "x", "natural": "yes", "answerable": "yes", "correct": "no"}', (YES, YES, NO)),
    ('{"justification": "x", "natural": true, "answerable": false, "correct": "not sure"}', (YES, NO, FAIL)),
    ('{"justification": "x", "natural": "yes", "answerable": "yes"}', (YES, YES, FAIL)),
    ('{"justification": "cut', (FAIL, FAIL, FAIL)),
    ("Natural: yes\nAnswerable: no\nCorrect: no", (YES, NO, NO)),
    ("**Natural:** yes\n**Answerable**: *yes*\nCorrect： no", (YES, YES, NO)),
    ("Natural: yes\nAnswerable: partly\nCorrect: not really", (YES, FAIL, FAIL)),
    ("Natural: ja\nAnswerable: nein\nCorrect: yes", (YES, NO, YES)),
    ("I think it is fine.", (FAIL, FAIL, FAIL)),
])
def test_the_qa_prescreen_reads_each_check_strictly(reply: str, expected: tuple[bool | None, ...]) -> None:
    read = read_checks(reply, "de", QC_LABELS)
    assert tuple(parsed.value if parsed.ok else None for parsed in read.values()) == expected
