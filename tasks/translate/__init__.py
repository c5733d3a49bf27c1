"""The translation stage: QA fields into other languages, each translation checked by a quality gate.

:func:`translate_units` translates and round-trips a cell's units through a
model and stores one ``translations`` row per unit; :func:`check_translation`
is the gate (output language, round-trip chrF, numbers, named entities).
"""

from tasks.translate.config import TranslateConfig
from tasks.translate.gate import Entities, GateResult, check_translation, gather_entities
from tasks.translate.translate import TRANSLATE_TEMPLATE, TranslationUnit, parse_translation, translate_units

__all__ = [
    "TRANSLATE_TEMPLATE",
    "Entities",
    "GateResult",
    "TranslateConfig",
    "TranslationUnit",
    "check_translation",
    "gather_entities",
    "parse_translation",
    "translate_units",
]
