"""Sentence splitting by sentencex, Wikimedia's rule-based sentence segmenter.

sentencex keeps rules for about 30 languages (abbreviations, the language's
own terminators, such as ``;`` as the Greek question mark) and resolves any
other code through MediaWiki's language fallback chains to the nearest one it
has (``gsw`` → ``de``, ``ba`` → ``ru``, ``jv`` → ``id`` …). A code with no
chain (``th``, ``km``, ``bo``, ``zh``, ``ko``, ``he``, ``fa`` …) gets its
English rules: Unicode's sentence terminators of every script (``. ! ?``,
``。！？``, ``।``, ``؟ ۔``, ``։``, ``።``, ``။`` and some 140 more) with English
abbreviations. It prefers leaving two sentences joined to splitting one.

sentencex is given the primary subtag of the rule's BCP 47 tag (``yue`` for
the wiki ``zh-yue``, ``jv`` for ``map-bms``'s ``jv-x-bms``, ``nap`` for
``roa-tara``'s ``nap-x-tara``): its codes and chains are MediaWiki's language
codes, where a tag with a private-use part would find no chain and fall
straight to English.

A line break always ends a sentence: dump text keeps headings and list items
on their own lines without final punctuation, while sentencex breaks only at
blank lines. So lines are split first and each line is segmented alone.

Known misses of sentencex (version 1.0.32), left as they are:

- Khmer ``។``/``៕`` and the Tibetan shad ``།`` are not terminators, so a line
  of Khmer or Tibetan text is one sentence.
- Burmese ``၊`` (a comma) and ``၏`` (also the genitive "of", as in
  မြန်မာနိုင်ငံ၏မြို့တော် "the capital of Myanmar") end a sentence, so Burmese
  is over-split.
- Thai (and Lao written without full stops) separates sentences with a space
  and no mark, which sentencex does not read as a boundary: a line of Thai is
  one sentence.
- The Greek question mark is recognised as ``;`` (U+003B) only, not as
  U+037E, the character that NFC normalisation turns into ``;``. Wikipedia
  text is NFC, so this matters only for text from elsewhere (model replies).
- An abbreviation that ends a sentence joins it to the next one (Russian
  "… в 1990 г. Потом …", French "… etc. Puis …"), and some abbreviations
  followed by a number or a name end one ("approx. | 5 million", French
  "M. | Dupont").
"""

from __future__ import annotations

from sentencex import segment

from tasks.text.languages import rule_for


def _sentencex_code(lang: str) -> str:
    """The language code sentencex is given for ``lang`` (see the module notes)."""
    return rule_for(lang).bcp47.split("-")[0].lower()


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of ``text``, each stripped and with its terminator (and closing quotes) attached."""
    code = _sentencex_code(lang)
    return [stripped for line in text.splitlines() for sentence in segment(code, line)
            if (stripped := sentence.strip())]
