"""Is an answer an abstention ("None", "I don't know", "keine Ahnung", "わかりません")? The whole answer, never a part.

The prompts that give a model a way out ask for one fixed answer,
:data:`ABSTENTION`: MKQA's (a question may have no short answer) and XRAG's
without retrieval (the protocol's own "None").  Models also decline in their
own words, in the language they were asked in or falling back to English, so
a short list of such whole answers per language is read as well.

An answer abstains only when, normalised (NFKC, case-folded, the quotes,
brackets, markdown and punctuation around it dropped, spaces collapsed), it
*is* the fixed answer or one of the phrases.  A phrase inside a longer answer
decides nothing: "Non solo Roma, ma anche Milano." holds Italian "non so",
"他不知道这件事，所以没有参加。" holds "不知道", and a song may be called "I Don't
Know" (that one is an abstention: a whole answer cannot be told from a
title).  Whatever else declines ("I don't know, the text only names the
architect") is for the judge, which sees the question, to read.  A language
without a list is read in English only.
"""

from __future__ import annotations

import unicodedata
from functools import cache

import regex

#: The fixed answer a prompt asks for when the model does not know (tasks/llm/templates/answer_*.j2).
ABSTENTION = "None"

# Per language: whole answers that decline or say "unknown", as written (they are normalised like answers).
PHRASES: dict[str, tuple[str, ...]] = {
    "en": (ABSTENTION, "n/a", "unknown", "no answer", "no idea", "not sure", "i don't know", "i do not know",
           "i'm not sure", "i am not sure", "i cannot answer", "i can't answer", "i cannot answer that",
           "not enough information", "there is no information", "cannot be determined", "it cannot be determined"),
    "de": ("ich weiß nicht", "ich weiß es nicht", "weiß ich nicht", "keine ahnung", "keine informationen",
           "kann ich nicht beantworten", "keine angabe", "unbekannt", "nicht bekannt"),
    "fr": ("je ne sais pas", "je ne peux pas répondre", "aucune information", "pas d'information", "inconnu"),
    "es": ("no lo sé", "no sé", "no puedo responder", "no hay información", "desconocido"),
    "it": ("non lo so", "non so", "non posso rispondere", "nessuna informazione", "sconosciuto"),
    "pt": ("não sei", "não posso responder", "não há informação", "desconhecido"),
    "nl": ("ik weet het niet", "weet ik niet", "geen informatie", "onbekend"),
    "ru": ("я не знаю", "не знаю", "не могу ответить", "нет информации", "неизвестно"),
    "ja": ("わかりません", "分かりません", "知りません", "答えられません", "情報がありません", "不明"),
    "zh": ("我不知道", "不知道", "无法回答", "無法回答", "不清楚", "没有相关信息", "沒有相關資訊", "不明", "未知"),
    "ko": ("모르겠습니다", "모릅니다", "알 수 없습니다", "답변할 수 없습니다", "정보가 없습니다"),
    "ar": ("لا أعرف", "لا اعرف", "لا أعلم", "لا يمكنني الإجابة", "لا توجد معلومات", "غير معروف"),
    "he": ("אני לא יודע", "אינני יודע", "אין מידע", "לא ידוע"),
    "hi": ("मुझे नहीं पता", "मैं नहीं जानता", "जानकारी नहीं है", "अज्ञात"),
    "id": ("saya tidak tahu", "tidak tahu", "tidak ada informasi", "tidak diketahui"),
}
#: What surrounds an answer without being part of it: spaces, punctuation (quotes, brackets, full stops, the
#: markdown of ``**None**``) and symbols (`` ` ``, ``~``).
_AROUND = regex.compile(r"^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$")
_SPACES = regex.compile(r"\s+")


def _normal(text: str) -> str:
    """``text`` as abstentions are compared: NFKC, case-folded, ’ as ', the punctuation and symbols around it
    dropped, spaces collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return _SPACES.sub(" ", _AROUND.sub("", folded))


def _family(lang: str) -> str:
    """MKQA and wiki codes to the list's key: zh_cn, zh_hk, zh-yue → zh."""
    return lang.replace("-", "_").split("_")[0]


@cache
def _abstentions(family: str) -> frozenset[str]:
    """The family's phrases and English's, normalised."""
    return frozenset(map(_normal, PHRASES.get(family, ()) + PHRASES["en"]))


def is_refusal(text: str | None, lang: str) -> bool:
    """Whether the whole of ``text`` abstains (see the module notes), in ``lang`` or in English; an empty answer,
    or one of nothing but punctuation and symbols ("—", "?"), abstains."""
    normal = _normal(text or "")
    return not normal or normal in _abstentions(_family(lang))
