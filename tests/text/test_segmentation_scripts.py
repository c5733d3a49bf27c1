"""Word segmentation of the unspaced scripts (ICU) and sentence splitting across scripts (sentencex).

Expected values are worked out by hand from the words' meanings, not copied
from the libraries' output; the glosses say what each piece means. Where a
library is known to be wrong, the right answer is asserted as an expected
failure (``xfail(strict=True)``), so a fixed release shows up as a pass to
promote.
"""

from __future__ import annotations

import pytest

from tasks.errors import ConfigError
from tasks.text.languages import rule_for
from tasks.text.segment import segmenter, token_spans, tokenize
from tasks.text.sentences import _sentencex_code, split_sentences

WORDS = [
    # Thai: I | eat | rice; cat | eat | fish; student | go | school (the compounds นักเรียน, โรงเรียน stay whole)
    ("th", "ฉันกินข้าว", ["ฉัน", "กิน", "ข้าว"]),
    ("th", "แมวกินปลา", ["แมว", "กิน", "ปลา"]),
    ("th", "นักเรียนไปโรงเรียน", ["นักเรียน", "ไป", "โรงเรียน"]),
    # Thai with spaces, Arabic and Thai digits: year | 2024 | has | 366 | day
    ("th", "ปี 2024 มี 366 วัน", ["ปี", "2024", "มี", "366", "วัน"]),
    ("th", "ปี ๒๕๖๗ มี ๓๖๖ วัน", ["ปี", "๒๕๖๗", "มี", "๓๖๖", "วัน"]),
    # Lao: cat | eat | fish; I | love | you
    ("lo", "ແມວກິນປາ", ["ແມວ", "ກິນ", "ປາ"]),
    ("lo", "ຂ້ອຍຮັກເຈົ້າ", ["ຂ້ອຍ", "ຮັກ", "ເຈົ້າ"]),
    # Khmer: cat | eat | fish; I | go | school (សាលារៀន, "hall of study", is one word)
    ("km", "ឆ្មាស៊ីត្រី", ["ឆ្មា", "ស៊ី", "ត្រី"]),
    ("km", "ខ្ញុំទៅសាលារៀន", ["ខ្ញុំ", "ទៅ", "សាលារៀន"]),
    # Burmese (verb last): cat | fish | eat | statement particle; I | school | go | particle
    ("my", "ကြောင်ငါးစားတယ်", ["ကြောင်", "ငါး", "စား", "တယ်"]),
    ("my", "ကျွန်တော်ကျောင်းသွားတယ်", ["ကျွန်တော်", "ကျောင်း", "သွား", "တယ်"]),
    # Tibetan, words of one syllable each (see the expected failure below): I | tea | drink; the shad is punctuation
    ("bo", "ང་ཇ་འཐུང་།", ["ང", "ཇ", "འཐུང"]),
]


@pytest.mark.parametrize(("lang", "text", "words"), WORDS, ids=[f"{lang}-{text}" for lang, text, _ in WORDS])
def test_unspaced_scripts_split_into_dictionary_words(lang: str, text: str, words: list[str]) -> None:
    assert rule_for(lang).segmenter == "icu"
    assert tokenize(text, lang) == words


@pytest.mark.xfail(strict=True, reason="ICU has no Tibetan dictionary: it splits at every tsheg, into syllables")
def test_tibetan_words_of_several_syllables_stay_whole() -> None:
    assert tokenize("བོད་ཡིག", "bo") == ["བོད་ཡིག"]  # "Tibetan script": བོད Tibet + ཡིག letter


def test_offsets_are_string_offsets_around_characters_outside_the_bmp() -> None:
    # ICU counts UTF-16 units: 𝐀, 𝐁, 😀 and 𠀀 are two each, one character each in Python.
    text = "𝐀𝐁 แมวกินปลา 😀 𠀀"
    assert list(token_spans(text, "th")) == [(0, 2), (3, 6), (6, 9), (9, 12), (15, 16)]
    assert tokenize(text, "th") == ["𝐀𝐁", "แมว", "กิน", "ปลา", "𠀀"]  # the emoji is not a word


def test_a_shared_iterator_serves_interleaved_calls() -> None:
    find = segmenter("icu", "th")
    assert segmenter("icu", "th") is find  # built once per language tag
    first, second = find("แมวกินปลา"), find("ฉันกินข้าว")  # the second call resets the shared iterator
    assert list(first) == [(0, 3), (3, 6), (6, 9)]
    assert list(second) == [(0, 3), (3, 6), (6, 10)]


def test_dictionary_segmenters_are_shared_across_languages() -> None:
    assert segmenter("jieba", "zh") is segmenter("jieba", "lzh")


def test_an_unknown_segmenter_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="whitespace, jieba, fugashi, icu"):
        segmenter("pythainlp", "th")


SENTENCES = [
    # Latin: abbreviations, initials, decimals, a web address and a German ordinal do not end sentences
    ("en", "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. It weighs 3.5 kg. See www.example.org now. "
           "Prof. Lee agreed.",
     ["Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.", "It weighs 3.5 kg.", "See www.example.org now.",
      "Prof. Lee agreed."]),
    ("de", "Er wurde am 3. Mai geboren, z. B. in Berlin. Dann zog er nach Wien.",
     ["Er wurde am 3. Mai geboren, z. B. in Berlin.", "Dann zog er nach Wien."]),
    # Greek: ";" is the question mark. How are you? Fine. You?
    ("el", "Τι κάνεις; Καλά. Εσύ;", ["Τι κάνεις;", "Καλά.", "Εσύ;"]),
    # Arabic question mark: What is your name? My name is Ahmad. Where do you live?
    ("ar", "ما اسمك؟ اسمي أحمد. أين تسكن؟", ["ما اسمك؟", "اسمي أحمد.", "أين تسكن؟"]),
    # Urdu full stop ۔ : This is the first sentence. Is this the second?
    ("ur", "یہ پہلا جملہ ہے۔ یہ دوسرا ہے؟", ["یہ پہلا جملہ ہے۔", "یہ دوسرا ہے؟"]),
    # Devanagari danda: I am a student. He is a teacher.
    ("hi", "मैं छात्र हूँ। वह शिक्षक है।", ["मैं छात्र हूँ।", "वह शिक्षक है।"]),
    # Armenian full stop ։ (the question mark ՞ sits on the question word): I am a student. Who are you?
    ("hy", "Ես ուսանող եմ։ Դու ո՞վ ես։", ["Ես ուսանող եմ։", "Դու ո՞վ ես։"]),
    # Ethiopic full stop ። : I am a student. He is a teacher.
    ("am", "እኔ ተማሪ ነኝ። እሱ አስተማሪ ነው።", ["እኔ ተማሪ ነኝ።", "እሱ አስተማሪ ነው።"]),
    # Burmese section mark ။, no space after it: I am a student. He is a teacher.
    ("my", "ကျွန်တော်ကျောင်းသားဖြစ်ပါတယ်။သူဆရာဖြစ်ပါတယ်။", ["ကျွန်တော်ကျောင်းသားဖြစ်ပါတယ်။", "သူဆရာဖြစ်ပါတယ်။"]),
    # Chinese, Japanese and Cantonese full-width marks, no spaces
    ("zh", "他是老师。你是学生吗？是的！", ["他是老师。", "你是学生吗？", "是的！"]),
    ("ja", "私は学生です。あなたは？", ["私は学生です。", "あなたは？"]),
    ("zh-yue", "我係學生。你呢？", ["我係學生。", "你呢？"]),
    # Lao with full stops: I am a student. He is a teacher.
    ("lo", "ຂ້ອຍເປັນນັກຮຽນ. ລາວເປັນຄູ.", ["ຂ້ອຍເປັນນັກຮຽນ.", "ລາວເປັນຄູ."]),
]


@pytest.mark.parametrize(("lang", "text", "sentences"), SENTENCES, ids=[lang for lang, _, _ in SENTENCES])
def test_sentences_end_at_each_scripts_terminators(lang: str, text: str, sentences: list[str]) -> None:
    assert split_sentences(text, lang) == sentences


KNOWN_MISSES = [
    # Khmer khan ។ : I am a student. He is a teacher.
    ("km", "ខ្ញុំជាសិស្ស។ គាត់ជាគ្រូ។", ["ខ្ញុំជាសិស្ស។", "គាត់ជាគ្រូ។"]),
    # Tibetan shad ། : I am a student. He is a teacher.
    ("bo", "ང་སློབ་ཕྲུག་ཡིན། ཁོ་དགེ་རྒན་ཡིན།", ["ང་སློབ་ཕྲུག་ཡིན།", "ཁོ་དགེ་རྒན་ཡིན།"]),
    # Thai separates sentences with a space: I am a student. He is a teacher.
    ("th", "ฉันเป็นนักเรียน เขาเป็นครู", ["ฉันเป็นนักเรียน", "เขาเป็นครู"]),
    # Burmese genitive ၏, not a sentence end: the capital of Myanmar (subject) | Naypyidaw is.
    ("my", "မြန်မာနိုင်ငံ၏မြို့တော်သည်နေပြည်တော်ဖြစ်သည်။", ["မြန်မာနိုင်ငံ၏မြို့တော်သည်နေပြည်တော်ဖြစ်သည်။"]),
    # Burmese little section ၊ is a comma: I am a student, he is a teacher.
    ("my", "ကျွန်တော်သည်ကျောင်းသားဖြစ်သည်၊သူသည်ဆရာဖြစ်သည်။", ["ကျွန်တော်သည်ကျောင်းသားဖြစ်သည်၊သူသည်ဆရာဖြစ်သည်။"]),
    # The Greek question mark U+037E (NFC turns it into ";")
    ("el", "Τι κάνεις\u037e Καλά.", ["Τι κάνεις\u037e", "Καλά."]),
]


@pytest.mark.xfail(strict=True, reason="a known miss of sentencex, listed in tasks/text/sentences.py")
@pytest.mark.parametrize(("lang", "text", "sentences"), KNOWN_MISSES,
                         ids=[f"{lang}-{n}" for n, (lang, _, _) in enumerate(KNOWN_MISSES)])
def test_known_misses_of_sentencex(lang: str, text: str, sentences: list[str]) -> None:
    assert split_sentences(text, lang) == sentences


def test_every_line_is_split_on_its_own() -> None:
    text = "  \n\nHistory\r\nIt began. It ended.\u2028Notes\n* first item\n* second item"
    assert split_sentences(text, "en") == ["History", "It began.", "It ended.", "Notes", "* first item",
                                           "* second item"]
    assert split_sentences("", "en") == []


def test_sentencex_gets_the_primary_subtag_of_the_language_tag() -> None:
    assert [_sentencex_code(lang) for lang in ("en", "zh-yue", "map-bms", "roa-tara", "be-tarask", "no")] == [
        "en", "yue", "jv", "nap", "be", "nb"]
