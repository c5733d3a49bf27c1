"""The translation stage: QA fields into one target language, each through the quality gate.

A unit (one field of one item) is translated forward, and what came back is
translated back into its source language for the gate's round trip — both as
one batch each, so the client's concurrency, cache and budget work across the
cell.  Every unit becomes one ``translations`` row whatever happened to it:

- ``ok`` with ``gate`` pass or fail (and the failed checks as ``reason``);
- ``call_failed`` / ``skipped_budget`` / ``parse_failed`` from the forward
  call, with no translation, or from the round trip, with the translation
  kept but no gate (it could not be checked).  A rerun retries what is
  unfinished; what already came back is served from the call cache.

Only ``gate = 'pass'`` rows are used by the instance builder.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import ConfigError
from tasks.llm import Budget, BudgetLedger, LLMClient, ModelSpec, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import ItemStatus, Parsed, failed, unwrap
from tasks.stage import StageOutput
from tasks.text.languages import all_rules, rule_for
from tasks.translate.config import TranslateConfig
from tasks.translate.gate import Entities, GateResult, check_translation, gather_entities
from tasks.warehouse.db import Warehouse

log = logging.getLogger(__name__)

TRANSLATE_TEMPLATE = "translate"
COLUMNS = ("benchmark", "item_id", "field", "src_lang", "tgt_lang", "source_text", "text", "back_text", "detected_lang",
           "chrf", "numbers_ok", "entities_ok", "gate", "status", "reason", "translator", "fingerprint")


class TranslationUnit(BaseModel):
    """One field of one QA item to translate, in the language it was written in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(description="The item's id in qa_items.")
    field: Literal["question", "answer", "context"]
    src_lang: str = Field(description="Language of ``text``.")
    text: str


def translate_units(
    wh: Warehouse, client: LLMClient, benchmark: str, units: Sequence[TranslationUnit], tgt_lang: str,
    translator: str, config: TranslateConfig, fp: str, *, budget: Budget | BudgetLedger | None = None,
    stage: str = "translate",
) -> StageOutput:
    """Translate ``units`` into ``tgt_lang`` with ``translator``, gate them, and replace the cell's rows.

    The cell is (benchmark, tgt_lang): its previous rows are deleted and the
    new ones inserted in one transaction.  Forward and round-trip calls spend
    from one ledger, so ``budget`` bounds the whole cell.
    """
    _check_units(units, tgt_lang)
    spec = client.registry.get(translator)
    ledger = BudgetLedger.of(budget)

    def translate(jobs: list[tuple[str, str, str]]) -> list[Parsed]:
        return _translate(client, spec, jobs, config, stage, ledger)

    forward = translate([(unit.src_lang, tgt_lang, unit.text) for unit in units])
    returned = [index for index, outcome in enumerate(forward) if outcome.ok]
    back = dict(zip(returned, translate([(tgt_lang, units[i].src_lang, forward[i].value) for i in returned])))
    entities = (gather_entities(wh, [(unit.src_lang, unit.text) for unit in units], tgt_lang)
                if config.check_entities else [{}] * len(units))
    outcomes = [_outcome(unit, forward[i], back.get(i), entities[i], tgt_lang, config) for i, unit in enumerate(units)]

    with wh.transaction() as cur:
        cur.execute("DELETE FROM translations WHERE benchmark = ? AND tgt_lang = ?", [benchmark, tgt_lang])
        if units:
            cur.executemany(
                f"INSERT INTO translations ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                [[benchmark, unit.item_id, unit.field, unit.src_lang, tgt_lang, unit.text, *outcome.columns(),
                  translator, fp] for unit, outcome in zip(units, outcomes)],
            )
    message = _summary(outcomes)
    log.info("%s into %s by %s: %s", benchmark, tgt_lang, translator, message)
    return StageOutput(rows=len(outcomes), message=message)


@dataclass(frozen=True)
class _Outcome:
    """What became of one unit: the translation columns of its row."""

    status: ItemStatus
    reason: str | None
    text: str | None = None
    back_text: str | None = None
    gate: GateResult | None = None

    @property
    def verdict(self) -> str | None:
        """The gate's pass | fail; None when there was no translation, or no round trip, to check."""
        return None if self.gate is None else "pass" if self.gate.passed else "fail"

    def columns(self) -> list[object]:
        """text, back_text, detected_lang, chrf, numbers_ok, entities_ok, gate, status, reason."""
        gate = self.gate
        checks = [gate.detected_lang, gate.chrf, gate.numbers_ok, gate.entities_ok] if gate else [None] * 4
        return [self.text, self.back_text, *checks, self.verdict, self.status, self.reason]


def _outcome(
    unit: TranslationUnit, forward: Parsed, back: Parsed | None, entities: Entities, tgt_lang: str,
    config: TranslateConfig,
) -> _Outcome:
    if back is None:
        return _Outcome(forward.status, forward.reason)
    if not back.ok:  # translated, but the round trip the gate needs did not come back
        return _Outcome(back.status, f"round trip: {back.reason}", text=forward.value)
    gate = check_translation(unit.text, unit.src_lang, forward.value, tgt_lang, back.value, entities, config)
    return _Outcome("ok", "; ".join(gate.reasons) or None, forward.value, back.value, gate)


def _check_units(units: Sequence[TranslationUnit], tgt_lang: str) -> None:
    """Bad units are a caller's bug: stop before paying, naming the unit."""
    rule_for(tgt_lang)
    seen: set[tuple[str, str]] = set()
    for unit in units:
        name = f"item {unit.item_id!r} field {unit.field}"
        rule_for(unit.src_lang)
        if unit.src_lang == tgt_lang:
            raise ConfigError(f"{name}: already in {tgt_lang}; translate only into other languages")
        if not unit.text.strip():
            raise ConfigError(f"{name}: empty text, nothing to translate")
        if (unit.item_id, unit.field) in seen:
            raise ConfigError(f"{name}: given twice")
        seen.add((unit.item_id, unit.field))


def _translate(
    client: LLMClient, spec: ModelSpec, jobs: list[tuple[str, str, str]], config: TranslateConfig, stage: str,
    ledger: BudgetLedger,
) -> list[Parsed]:
    """(src_lang, tgt_lang, text) jobs as one batch of calls; each outcome parsed or explained."""
    # a completion model carries on the few-shot pattern after its line: stop it there
    stop = ("\n",) if spec.mode == "completion" else None
    requests = [prompt_request(spec, TRANSLATE_TEMPLATE, max_tokens=config.token_limit(text), stop=stop,
                               source=rule_for(src).name, target=rule_for(tgt).name, text=text)
                for src, tgt, text in jobs]
    results = client.run_sync(spec.name, requests, stage=stage, budget=ledger)
    return [item_outcome(result, parse_translation) for result in results]


@cache
def _label() -> re.Pattern[str]:
    """A line opening with a label: "German:", "**French translation:**", "Translation:"."""
    names = "|".join(sorted((re.escape(rule.name) for rule in all_rules().values()), key=len, reverse=True))
    return re.compile(rf"^[*_#\s]*(?:(?:{names})(?:\s+translation)?|translation)[*_\s]*[:：][*_\s]*",
                      re.IGNORECASE | re.MULTILINE)


def parse_translation(reply: str) -> Parsed:
    """The translation in a model's reply (value: str).

    Tolerated: a leading label the model echoes ("German:", "Translation:",
    in markdown emphasis too — whichever language it names, the gate judges
    the language), wrapping quotes, and what follows the translation: a blank
    line, or the next "Language:" line of the few-shot pattern.  An empty
    reply, or one that is only a label, is ``parse_failed``.
    """
    text = reply.strip()
    label = _label().match(text)
    if label:
        text = text[label.end():]
    text = text.split("\n\n")[0]
    following = _label().search(text)
    if following:
        text = text[:following.start()]
    text = unwrap(text)
    if not text:
        return failed("no translation in the reply")
    return Parsed("ok", text)


def _summary(outcomes: list[_Outcome]) -> str:
    counts = Counter(outcome.verdict or outcome.status for outcome in outcomes)
    return ", ".join(f"{counts[key]} {key}" for key in ("pass", "fail", "parse_failed", "call_failed", "skipped_budget")
                     if counts[key]) or "nothing to translate"
