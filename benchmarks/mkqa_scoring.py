"""MKQA official-mode scoring against the official scorer: same numbers, how much faster.

Builds a synthetic MKQA annotation file and prediction files (seeded; every
answer type, articles, ASCII and Unicode punctuation, CJK, ties in
``no_answer_prob``) for all 26 languages, scores them with babelbench's
official mode, and — when ``MKQA_OFFICIAL_DIR`` names a checkout of
apple/ml-mkqa (its ``mkqa_eval.py``) — with the official script on the same
files, reporting ``vs_official`` (our examples/s ÷ theirs) and whether every
number matched.  Without the checkout the comparison is skipped with a line
saying so.  Run: ``.venv/bin/python benchmarks/mkqa_scoring.py [--examples 10000]``.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.metrics.mkqa import score_files  # noqa: E402
from tasks.metrics.mkqa_data import MKQA_LANGUAGES  # noqa: E402

WORDS = {
    "latin": ["river", "bridge", "Velna", "Tarsk", "opera", "station", "north", "l'homme", "d'or", "lago", "brücke",
              "the", "a", "an", "la", "le", "les", "der", "die", "das", "el", "los", "de", "het", "en", "ett", "il",
              "gli", "una", "uno", "o", "os", "se", "az", "egy", "của", "là", "cái", "alqamar", "café", "naïve"],
    "cjk": list("河桥站城大学音乐会北南东西年月日の川駅橋東京"),
    "arabic": ["القمر", "النهر", "جسر", "مدينة", "ال", "كتاب"],
    "thai": ["แม่น้ำ", "สะพาน", "เมือง", "ปี"],
}
PUNCTUATION = ["", "", "", "!", ",", ".", "-", "'", "«", "»", "、", "。", "?", "(", ")"]
TYPES = ["entity", "number", "date", "short_phrase", "binary", "unanswerable", "long_answer", "number_with_unit"]


def _script(lang: str) -> str:
    if lang in ("zh_cn", "zh_hk", "zh_tw", "ja", "ko"):
        return "cjk"
    if lang in ("ar", "he"):
        return "arabic"
    return "thai" if lang in ("th", "km") else "latin"


def _phrase(rng: random.Random, lang: str) -> str:
    words = WORDS[_script(lang)]
    joiner = "" if _script(lang) == "cjk" and rng.random() < 0.7 else " "
    return joiner.join(rng.choice(words) + rng.choice(PUNCTUATION) for _ in range(rng.randint(1, 4)))


def synthetic_files(directory: Path, examples: int, seed: int) -> tuple[Path, Path]:
    """``mkqa.jsonl.gz`` and ``predictions/<lang>.jsonl`` for every language, deterministic for ``seed``."""
    rng = random.Random(seed)
    gold_path, predictions = directory / "mkqa.jsonl.gz", directory / "predictions"
    predictions.mkdir(parents=True, exist_ok=True)
    lines: dict[str, list[str]] = {lang: [] for lang in MKQA_LANGUAGES}
    with gzip.open(gold_path, "wt", encoding="utf-8") as gold:
        for _ in range(examples):
            identifier = rng.randint(-(2**63), 2**63 - 1)
            kind = rng.choice(TYPES)
            answers, queries = {}, {}
            for lang in MKQA_LANGUAGES:
                queries[lang] = _phrase(rng, lang) + "?"
                if kind in ("unanswerable", "long_answer"):
                    answers[lang] = [{"type": kind, "text": None}]
                    truth = ""
                elif kind == "binary":
                    truth = rng.choice(["yes", "no"])
                    answers[lang] = [{"type": kind, "text": truth}]
                else:
                    truth = _phrase(rng, lang)
                    aliases = [_phrase(rng, lang) for _ in range(rng.randint(0, 2))]
                    answers[lang] = [{"type": kind, "text": truth, "aliases": aliases}]
                lines[lang].append(json.dumps(_prediction(rng, identifier, lang, kind, truth), ensure_ascii=False))
            gold.write(json.dumps({"example_id": identifier, "query": queries["en"], "queries": queries,
                                   "answers": answers}, ensure_ascii=False) + "\n")
    for lang, records in lines.items():
        (predictions / f"{lang}.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    return gold_path, predictions


def _prediction(rng: random.Random, identifier: int, lang: str, kind: str, truth: str) -> dict:
    roll = rng.random()
    binary = rng.choice(["Yes", "no"]) if kind == "binary" and roll < 0.6 else None
    if roll < 0.35:
        text = truth
    elif roll < 0.5:
        text = rng.choice(["the ", "la ", "ال", ""]) + truth + rng.choice(PUNCTUATION)
    elif roll < 0.65:
        text = ""
    else:
        text = _phrase(rng, lang)
    return {"example_id": identifier, "prediction": text or rng.choice([None, ""]), "binary_answer": binary,
            "no_answer_prob": round(rng.gauss(0, 3), 1)}  # one decimal: many ties


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        say(f"building {args.examples} synthetic examples x {len(MKQA_LANGUAGES)} languages")
        gold_path, predictions = synthetic_files(Path(tmp), args.examples, args.seed)
        total = args.examples * len(MKQA_LANGUAGES)

        def ours() -> dict:  # what `babelbench score mkqa --mode official` runs
            return score_files(gold_path, predictions, list(MKQA_LANGUAGES), "official")["languages"]

        mine = best_of("babelbench official mode", args.repeat, ours)
        metrics = {"examples": args.examples, "languages": len(MKQA_LANGUAGES),
                   "ours_examples_per_s": round(per_second(total, mine.seconds)), "official_examples_per_s": None,
                   "identical_to_official": None}
        ratios: dict[str, float | None] = {"vs_official": None}
        official_dir = os.environ.get("MKQA_OFFICIAL_DIR")
        if official_dir:
            sys.path.insert(0, official_dir)
            official = importlib.import_module("mkqa_eval")

            def theirs() -> dict:
                annotations = official.read_annotations(str(gold_path))
                return {lang: official.evaluate(annotations[lang], official.read_predictions(
                    str(predictions / f"{lang}.jsonl")), lang, print_metrics=False) for lang in MKQA_LANGUAGES}

            reference = best_of("official mkqa_eval.py", args.repeat, theirs)
            metrics["official_examples_per_s"] = round(per_second(total, reference.seconds))
            renamed = {lang: {("best_f1_thresh" if k == "best_f1_threshold" else k): v for k, v in scores.items()}
                       for lang, scores in reference.result.items()}
            metrics["identical_to_official"] = renamed == mine.result
            ratios["vs_official"] = round(reference.seconds / mine.seconds, 2)
        else:
            say("MKQA_OFFICIAL_DIR is not set: the official scorer is not compared (set it to a checkout of apple/ml-mkqa)")
    emit("mkqa_scoring", metrics, ratios)


if __name__ == "__main__":
    main()
