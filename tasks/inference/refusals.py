"""Is a response a refusal ("I don't know", "keine Angabe", "わかりません")? Read in its own language and in English.

Models decline in the language they were asked in, and often fall back to
English to do it, so both phrase lists are checked.  A phrase counts in a
short answer, or near the start of a long one when its clause ends there ("I
don't know. The text does not say."): "I don't know why critics disliked it,
but the bridge opened in 1871 after years of work" is an answer.  The lists
are short and hand-written; a language without a list is checked in English
only.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# Per language: phrases that decline to answer, lower-cased (NFKC, casefold).
PHRASES: dict[str, tuple[str, ...]] = {
    "en": ("i don't know", "i do not know", "i'm not sure", "i am not sure", "i cannot answer", "i can't answer",
           "i'm unable to", "i am unable to", "no answer", "not enough information", "there is no information",
           "cannot be determined", "i don't have", "i do not have"),
    "de": ("ich weiß nicht", "ich weiss nicht", "weiß es nicht", "weiss es nicht", "weiß ich nicht", "keine ahnung", "keine informationen",
           "kann ich nicht beantworten", "keine angabe"),
    "fr": ("je ne sais pas", "je ne peux pas répondre", "aucune information", "pas d'information"),
    "es": ("no lo sé", "no sé", "no puedo responder", "no hay información"),
    "it": ("non lo so", "non so", "non posso rispondere", "nessuna informazione"),
    "pt": ("não sei", "não posso responder", "não há informação"),
    "nl": ("ik weet het niet", "weet ik niet", "geen informatie"),
    "ru": ("я не знаю", "не знаю", "не могу ответить", "нет информации"),
    "ja": ("わかりません", "分かりません", "知りません", "答えられません", "情報がありません"),
    "zh": ("我不知道", "不知道", "无法回答", "無法回答", "不清楚", "没有相关信息", "沒有相關資訊"),
    "ko": ("모르겠습니다", "모릅니다", "알 수 없습니다", "답변할 수 없습니다", "정보가 없습니다"),
    "ar": ("لا أعرف", "لا اعرف", "لا أعلم", "لا يمكنني الإجابة", "لا توجد معلومات"),
    "he": ("אני לא יודע", "אינני יודע", "אין מידע"),
    "hi": ("मुझे नहीं पता", "मैं नहीं जानता", "जानकारी नहीं है"),
    "id": ("saya tidak tahu", "tidak tahu", "tidak ada informasi"),
}
#: Whole answers that say "unknown": as words inside an answer they are often part of it ("The Unknown Soldier").
UNKNOWN = frozenset({"unknown", "unbekannt", "nicht bekannt", "inconnu", "desconocido", "sconosciuto", "desconhecido",
                     "onbekend", "неизвестно", "不明", "未知", "غير معروف", "לא ידוע", "अज्ञात", "tidak diketahui",
                     "n/a", "none"})
#: In a long answer a phrase counts only within this many characters of the start.
START_WINDOW = 24
SHORT_ANSWER_CHARS = 60
_CLAUSE_END = frozenset(".,;:!?。，、！？")


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'").strip()


def _family(lang: str) -> str:
    """MKQA and wiki codes to the list's key: zh_cn, zh_hk, zh-yue → zh."""
    return lang.replace("-", "_").split("_")[0]


@cache
def _phrases(family: str) -> tuple[tuple[str, ...], re.Pattern[str], int]:
    """A family's phrases and English's, one pattern that finds any of them, and the longest one's length.

    The pattern answers most answers in one search (none of the phrases, or
    none near the start of a long answer), where a ``find`` per phrase cost
    three times as much; only the rest go through the phrases one by one.
    """
    phrases = PHRASES.get(family, ()) + PHRASES["en"]
    return phrases, re.compile("|".join(map(re.escape, phrases))), max(map(len, phrases))


def is_refusal(text: str | None, lang: str) -> bool:
    """Whether ``text`` declines to answer, in ``lang`` or in English; an empty answer is a refusal."""
    normal = _normal(text or "")
    if not normal or normal.strip(" .!。！") in UNKNOWN:
        return True
    phrases, anywhere, longest = _phrases(_family(lang))
    if len(normal) <= SHORT_ANSWER_CHARS:
        return anywhere.search(normal) is not None
    first = anywhere.search(normal, 0, START_WINDOW + longest)
    if first is None or first.start() > START_WINDOW:
        return False
    for phrase in phrases:
        at = normal.find(phrase, 0, START_WINDOW + len(phrase))  # its first occurrence, if within the window
        if at == -1:
            continue
        after = normal[at + len(phrase):at + len(phrase) + 1]
        if not after or after in _CLAUSE_END:
            return True
    return False
