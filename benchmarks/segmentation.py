"""Word segmentation and sentence splitting per script: characters per second, and sentences found per written.

What it times, per script, on documents of the script's own text: ``tokenize``
(the language rule's segmenter: the word regex for spaced scripts, jieba,
fugashi or ICU's word break) and ``split_sentences`` (sentencex, line by line)
— the calls the index, truncation, features and QA stages make. Han text is
timed twice, through jieba (``zh``) and through ICU (``zh-yue``, whose rule
names ICU), to show what the dictionary segmenter costs.

Inputs: for each script a list of 25-40 common words (city, river, bridge,
old, new, built, king, war, century, school … and a few function words),
drawn with Zipf-like weights into sentences of 6-20 words, written as the
script writes them: words separated by spaces, by nothing (Chinese, Japanese,
Thai, Lao, Khmer, Burmese) or by the tsheg (Tibetan); sentences ended by the
script's own mark (``.``, ``؟``, ``।``, ``։``, ``።``, ``。``, ``။``, ``។``,
``།``) or, in Thai, by a space; 3 sentences a line, 4 lines a document
(200-900 characters). The same seed gives the same text.

Metrics per script key: ``<key>_words_cps`` and ``<key>_sentences_cps``
(characters per second, best of ``--repeat``), ``<key>_words`` (tokens
found) and ``<key>_sentences_found_per_written`` (1.0 when every sentence
boundary written was found; lower where sentencex misses the script's
terminator, higher where it over-splits, as listed in
``tasks/text/sentences.py``). ``<segmenter>_load_s`` is the first-call load
time of each dictionary segmenter. Ratios: ``<key>_words_vs_latin``
(segmentation speed relative to the Latin regex) and ``han_icu_vs_jieba``.

Run: ``.venv/bin/python benchmarks/segmentation.py [--chars 300000] [--repeat 3] [--seed 7]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.text.languages import rule_for  # noqa: E402
from tasks.text.segment import tokenize  # noqa: E402
from tasks.text.sentences import split_sentences  # noqa: E402

SENTENCES_PER_LINE = 3
LINES_PER_DOCUMENT = 4


@dataclass(frozen=True)
class Script:
    """How one script's text is written: its words, what joins them, what ends a sentence and what follows."""

    key: str
    lang: str
    words: str
    joiner: str = " "
    terminator: str = "."
    separator: str = " "


ZH = ("的 在 是 和 了 这座 城市 河流 大桥 港口 老城 新城 第一 建成 开通 流经 山丘 国家 铁路 车站 市场 教堂 塔楼 城墙 "
      "国王 战争 世纪 年 人口 岛屿 山脉 湖泊 山谷 博物馆 大学 学校")
SCRIPTS = [
    Script("latin", "en", "the of in and a to was is by city river bridge harbour old new first built opened flows "
                          "through hills country railway station market church tower wall king war century years "
                          "people island mountain lake valley museum university school"),
    Script("cyrillic", "ru", "в и на с по город река мост гавань старый новый первый построен открыт течёт через "
                             "холмы страна железная дорога станция рынок церковь башня стена король война век год "
                             "люди остров гора озеро долина музей университет школа"),
    Script("greek", "el", "και το η του στο πόλη ποτάμι γέφυρα λιμάνι παλιός νέος πρώτος χτίστηκε άνοιξε ρέει "
                          "λόφοι χώρα σιδηρόδρομος σταθμός αγορά εκκλησία πύργος τείχος βασιλιάς πόλεμος αιώνας "
                          "χρόνια άνθρωποι νησί βουνό λίμνη κοιλάδα μουσείο πανεπιστήμιο σχολείο"),
    Script("arabic", "ar", "في من على و مدينة نهر جسر ميناء قديم جديد أول بني افتتح يجري عبر تلال بلد سكة حديد "
                           "محطة سوق كنيسة برج سور ملك حرب قرن سنة سكان جزيرة جبل بحيرة وادي متحف جامعة مدرسة",
           terminator="؟"),
    Script("devanagari", "hi", "है की में से और शहर नदी पुल बंदरगाह पुराना नया पहला बनाया खोला बहती पहाड़ियों देश "
                               "रेलवे स्टेशन बाज़ार मंदिर मीनार दीवार राजा युद्ध सदी साल लोग द्वीप पर्वत झील घाटी "
                               "संग्रहालय विश्वविद्यालय विद्यालय", terminator="।"),
    Script("armenian", "hy", "և է մեջ քաղաք գետ կամուրջ նավահանգիստ հին նոր առաջին կառուցվել բացվել հոսում լեռ "
                             "երկիր երկաթուղի կայարան շուկա եկեղեցի աշտարակ պարիսպ թագավոր պատերազմ դար տարի "
                             "բնակչություն կղզի լիճ հովիտ թանգարան համալսարան դպրոց", terminator="։"),
    Script("ethiopic", "am", "እና ነው ከተማ ወንዝ ድልድይ ወደብ አሮጌ አዲስ የመጀመሪያ ተሠራ ተከፈተ ይፈሳል ኮረብታ አገር ባቡር ጣቢያ "
                             "ገበያ ቤተክርስቲያን ግንብ ንጉሥ ጦርነት ዘመን ዓመት ሕዝብ ደሴት ተራራ ሐይቅ ሸለቆ ሙዚየም "
                             "ዩኒቨርሲቲ ትምህርት", terminator="።"),
    Script("hangul", "ko", "도시 강 다리 항구 오래된 새로운 첫 건설 개통 흐른다 언덕 나라 철도 역 시장 교회 탑 성벽 왕 "
                           "전쟁 세기 년 인구 섬 산 호수 계곡 박물관 대학교 학교 그리고 있다"),
    Script("han_jieba", "zh", ZH, joiner="", terminator="。", separator=""),
    Script("han_icu", "zh-yue", ZH, joiner="", terminator="。", separator=""),
    Script("japanese", "ja", "は が の に を で と 東京 大阪 川 橋 港 町 古い 新しい 最初 建設 開通 流れる 丘 国 鉄道 "
                             "駅 市場 教会 塔 城壁 王 戦争 世紀 年 人口 島 山 湖 谷 博物館 大学 学校",
           joiner="", terminator="。", separator=""),
    Script("thai", "th", "ที่ และ ของ ใน มี เป็น เมือง แม่น้ำ สะพาน ท่าเรือ เก่า ใหม่ แรก สร้าง เปิด ไหล ผ่าน "
                         "เนินเขา ประเทศ ทางรถไฟ สถานี ตลาด วัด หอคอย กำแพง กษัตริย์ สงคราม ศตวรรษ ปี ประชากร "
                         "เกาะ ภูเขา ทะเลสาบ หุบเขา พิพิธภัณฑ์ มหาวิทยาลัย โรงเรียน", joiner="", terminator=""),
    Script("lao", "lo", "ແລະ ຂອງ ໃນ ມີ ເປັນ ເມືອງ ແມ່ນ້ຳ ຂົວ ທ່າເຮືອ ເກົ່າ ໃໝ່ ທຳອິດ ສ້າງ ເປີດ ໄຫຼ ຜ່ານ ພູ ປະເທດ "
                        "ທາງລົດໄຟ ສະຖານີ ຕະຫຼາດ ວັດ ກຳແພງ ກະສັດ ສົງຄາມ ສະຕະວັດ ປີ ປະຊາກອນ ເກາະ ພູເຂົາ ໜອງ "
                        "ຫໍພິພິທະພັນ ມະຫາວິທະຍາໄລ ໂຮງຮຽນ", joiner=""),
    Script("khmer", "km", "និង របស់ នៅ មាន ជា ទីក្រុង ទន្លេ ស្ពាន កំពង់ផែ ចាស់ ថ្មី ដំបូង សាងសង់ បើក ហូរ កាត់ ភ្នំ "
                          "ប្រទេស ផ្លូវរថភ្លើង ស្ថានីយ ផ្សារ វត្ត ប៉ម កំពែង ស្តេច សង្គ្រាម សតវត្ស ឆ្នាំ ប្រជាជន "
                          "កោះ បឹង ជ្រលង សារមន្ទីរ សាកលវិទ្យាល័យ សាលារៀន", joiner="", terminator="។"),
    Script("burmese", "my", "နှင့် ၏ တွင် ရှိ ဖြစ် မြို့ မြစ် တံတား ဆိပ်ကမ်း ဟောင်း သစ် ပထမ ဆောက် ဖွင့် စီး ဖြတ် "
                            "တောင် နိုင်ငံ ရထားလမ်း ဘူတာ ဈေး ဘုရား မျှော်စင် တံတိုင်း ဘုရင် စစ် ရာစု နှစ် "
                            "လူဦးရေ ကျွန်း ကန် ချိုင့်ဝှမ်း ပြတိုက် တက္ကသိုလ် ကျောင်း", joiner="", terminator="။"),
    Script("tibetan", "bo", "དང ཀྱི ལ ཡོད ཡིན གྲོང་ཁྱེར ཆུ་བོ ཟམ་པ རྙིང་པ གསར་པ དང་པོ བཞེངས ཁ་ཕྱེ རི ལུང་པ ས་ཆ "
                            "ཚོང་ར དགོན་པ རྒྱལ་པོ དམག་འཁྲུག དུས་རབས ལོ མི་མང གླིང མཚོ ལུང་གཤོང སློབ་གྲྭ "
                            "གཙུག་ལག་སློབ་གྲྭ", joiner="་", terminator="།"),
]


def _sentence(rng: random.Random, script: Script) -> str:
    """6-20 words, the last one of three characters or more.

    The lists' function words are shorter, and a sentence ending in "в." or
    "a." would read as an initial to sentencex, which is not what is measured.
    """
    words = script.words.split()
    drawn = rng.choices(words, weights=[1 / (rank + 1) ** 0.8 for rank in range(len(words))], k=rng.randint(5, 19))
    text = script.joiner.join([*drawn, rng.choice([word for word in words if len(word) >= 3])])
    return text[:1].upper() + text[1:] + script.terminator


def _documents(script: Script, chars: int, seed: int) -> tuple[list[str], int]:
    """Documents of about ``chars`` characters in all, and how many sentences they hold."""
    rng = random.Random(seed)
    documents, total, sentences = [], 0, 0
    while total < chars:
        lines = [script.separator.join(_sentence(rng, script) for _ in range(SENTENCES_PER_LINE))
                 for _ in range(LINES_PER_DOCUMENT)]
        documents.append("\n".join(lines))
        total += len(documents[-1])
        sentences += SENTENCES_PER_LINE * LINES_PER_DOCUMENT
    return documents, sentences


def _words(documents: list[str], lang: str) -> int:
    return sum(len(tokenize(document, lang)) for document in documents)


def _sentences(documents: list[str], lang: str) -> int:
    return sum(len(split_sentences(document, lang)) for document in documents)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=300_000, help="characters of text per script")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    metrics: dict[str, float | int | str | None] = {"chars_per_script": args.chars, "repeat": args.repeat}
    loaded: set[str] = set()
    for script in SCRIPTS:
        documents, written = _documents(script, args.chars, args.seed)
        chars = sum(map(len, documents))
        segmenter = rule_for(script.lang).segmenter
        say(f"{script.key} ({script.lang}, {segmenter}): {len(documents)} documents, {chars:,} characters")
        if segmenter != "whitespace" and segmenter not in loaded:  # the first call loads the dictionary
            start = time.perf_counter()
            tokenize(documents[0], script.lang)
            metrics[f"{segmenter}_load_s"] = round(time.perf_counter() - start, 3)
            loaded.add(segmenter)
        words = best_of("words", args.repeat, lambda: _words(documents, script.lang))
        sentences = best_of("sentences", args.repeat, lambda: _sentences(documents, script.lang))
        metrics[f"{script.key}_words_cps"] = round(per_second(chars, words.seconds))
        metrics[f"{script.key}_sentences_cps"] = round(per_second(chars, sentences.seconds))
        metrics[f"{script.key}_words"] = words.result
        metrics[f"{script.key}_sentences_found_per_written"] = round(sentences.result / written, 3)
    latin = metrics["latin_words_cps"]
    ratios = {f"{script.key}_words_vs_latin": round(float(metrics[f"{script.key}_words_cps"]) / float(latin), 3)
              for script in SCRIPTS if script.key != "latin"}
    ratios["han_icu_vs_jieba"] = round(float(metrics["han_icu_words_cps"]) / float(metrics["han_jieba_words_cps"]), 2)
    emit("segmentation", metrics, ratios)


if __name__ == "__main__":
    main()
