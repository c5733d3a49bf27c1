"""The quality gate of one machine translation: language, round trip, numbers, named entities.

No reference translation exists, so each check compares the translation with
what it must still carry:

- **language** — lingua's verdict on the translation is the target language
  (a model that echoes the source or answers in English fails here);
- **round trip** — the translation translated back, scored with chrF against
  the source: meaning lost on the way comes back as a different sentence;
- **numbers** — every number of the source is in the translation, compared as
  values across scripts and separator conventions (:mod:`tasks.translate.numbers`);
- **entities** — every named entity of the source (Wikipedia titles, keyed by
  QID) is in the translation under its target-language title, or under the
  source form when the target wiki has no title for it and both languages
  share a script — the XRAG convention of keeping a name as it is when there
  is no usual target form.

A translation passes when every applicable check does; the reasons of the
failed ones are kept with the item.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sacrebleu import sentence_chrf

from tasks.dumps.titles import entity_matcher, language_names
from tasks.inference.language import response_language, target_code
from tasks.text.language_id import detect_language, lingua_code
from tasks.text.languages import rule_for
from tasks.translate.config import TranslateConfig
from tasks.translate.numbers import missing_numbers
from tasks.warehouse.db import Warehouse

#: QID → (the forms the source text used, the target language's titles for it).
Entities = Mapping[str, tuple[frozenset[str], frozenset[str]]]

# Letters an inflected form may add after a name in space-separated scripts: German
# "des Keldagebirges", Russian "в Тарске", "Тарскому".  Allowing them also accepts
# "Tarskian" for "Tarsk" — a gate that wrongly fails every inflected name is worse.
MAX_INFLECTION = 3


@dataclass(frozen=True)
class GateResult:
    """The checks of one translation.

    ``detected_lang`` is None when the text was too short for the language
    check (not applicable) or lingua found no language; ``numbers_ok`` and
    ``entities_ok`` are None when that check is switched off.  ``reasons``
    names every failed check.
    """

    detected_lang: str | None
    chrf: float
    numbers_ok: bool | None
    entities_ok: bool | None
    passed: bool
    reasons: list[str] = field(default_factory=list)


def round_trip_chrf(back_text: str, source_text: str) -> float:
    """chrF (0–100) of the back-translation against the source."""
    return float(sentence_chrf(back_text, [source_text]).score)


def missing_entities(entities: Entities, text: str, src_lang: str, tgt_lang: str) -> list[str]:
    """The entities (``"QID (forms)"``) that ``text`` does not name in an accepted form.

    Accepted: a target-language title; if the target wiki has none and the two
    languages share a script, a form the source used.  An entity with no
    target title in another script cannot be checked and is skipped.
    Matching ignores case (French writes "les monts Kelda" under the title
    "Monts Kelda"); in space-separated scripts a form must start a word and
    may carry a short inflectional ending.
    """
    same_script = rule_for(src_lang).script == rule_for(tgt_lang).script
    spaced = not rule_for(tgt_lang).needs_segmentation
    folded = text.casefold()
    missing = []
    for qid, (source_forms, target_forms) in sorted(entities.items()):
        accepted = target_forms or (source_forms if same_script else frozenset())
        if accepted and not any(_mentions(folded, form.casefold(), spaced) for form in accepted):
            missing.append(f"{qid} ({' / '.join(sorted(accepted))})")
    return missing


def _mentions(text: str, form: str, spaced: bool) -> bool:
    start = text.find(form)
    while start != -1:
        if not spaced:
            return True
        end = start + len(form)
        if (start == 0 or not text[start - 1].isalnum()) and _word_ends(text, end):
            return True
        start = text.find(form, start + 1)
    return False


def _word_ends(text: str, end: int) -> bool:
    """Whether the word ends at ``end``, or within ``MAX_INFLECTION`` letters after it."""
    for offset in range(MAX_INFLECTION + 1):
        position = end + offset
        if position >= len(text) or not text[position].isalnum():
            return True
        if not text[position].isalpha():
            return False
    return False


def check_translation(
    source_text: str, src_lang: str, text: str, tgt_lang: str, back_text: str, entities: Entities,
    config: TranslateConfig,
) -> GateResult:
    """Run the gate on one translation (``text``) of ``source_text`` and its round trip ``back_text``."""
    reasons = []
    detected = None
    # a target lingua cannot detect is checked by script only (never judged by the nearest language lingua knows)
    expected = lingua_code(tgt_lang)
    if expected is None:
        placed = response_language(text, tgt_lang)
        if placed.status == "ok" and placed.detected != target_code(tgt_lang):
            reasons.append(f"language: no letter in the scripts of {tgt_lang} (reads as {placed.detected})")
    elif sum(ch.isalpha() for ch in text) >= config.min_detect_letters:
        detected = detect_language(text, tgt_lang, frozenset({src_lang}))  # in play: the target, the source, English
        if detected is None:
            reasons.append(f"language: lingua recognises no language in the translation (expected {tgt_lang})")
        elif detected != expected:
            reasons.append(f"language: detected {detected}, expected {tgt_lang}")
    chrf = round_trip_chrf(back_text, source_text)
    if chrf < config.min_chrf:
        reasons.append(f"round trip: chrF {chrf:.1f} < {config.min_chrf:g}")
    numbers_ok = None
    if config.check_numbers:
        lost = missing_numbers(source_text, text)
        numbers_ok = not lost
        if lost:
            reasons.append("numbers missing: " + ", ".join(lost))
    entities_ok = None
    if config.check_entities:
        absent = missing_entities(entities, text, src_lang, tgt_lang)
        entities_ok = not absent
        if absent:
            reasons.append("entities missing: " + ", ".join(absent))
    return GateResult(detected, chrf, numbers_ok, entities_ok, not reasons, reasons)


def gather_entities(wh: Warehouse, texts: Sequence[tuple[str, str]], tgt_lang: str) -> list[Entities]:
    """The entities of each (src_lang, text): QID → (forms found in the text, ``tgt_lang`` titles of the QID).

    Each source language's title matcher and the target's titles are read
    from the warehouse once for the whole batch.
    """
    target_forms: dict[str, set[str]] = defaultdict(set)
    for form, qid in language_names(wh, tgt_lang).items():
        target_forms[qid].add(form)
    matchers = {lang: entity_matcher(wh, lang) for lang in sorted({lang for lang, _ in texts})}
    return [
        {qid: (frozenset(forms), frozenset(target_forms.get(qid, ())))
         for qid, forms in matchers[lang].find(text).items()}
        for lang, text in texts
    ]
