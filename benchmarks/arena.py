"""Arena speed: batched features against a per-response loop, and the Bradley–Terry bootstrap against refitting.

* ``features_vs_loop``: the deterministic features' responses/s as the
  features stage computes them (one batch per feature: one trec_eval run for
  every citation ranking, one BLEU and one ROUGE scorer per language) ÷ a plain
  loop computing the same values response by response with the same libraries
  (``ir_measures.calc_aggregate`` per response, ``sacrebleu.sentence_bleu``,
  a ROUGE scorer per response) — goal ≥ 10;
* ``bt_bootstrap_s``: 19 systems, ~17,000 battles (every pair on 50 queries in
  both orders), 200 tournaments — goal ≤ 1 s;
* ``bt_vs_refit``: that time ÷ what refitting each tournament from its raw,
  resampled battles with a general-purpose solver takes (scikit-learn's
  logistic regression on ±1 design rows, as public arena code does; timed on
  ``--refit-tournaments`` tournaments and scaled to 200) — goal ≥ 10.

Run: ``.venv/bin/python benchmarks/arena.py [--responses 3000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.arena.bradley_terry import Battle, ratings  # noqa: E402
from tasks.features.deterministic import DETERMINISTIC, bleu_tokenizer  # noqa: E402
from tasks.features.inputs import FeatureInput  # noqa: E402

SENTENCES = {
    "en": ["The river rises in the hills north of the old town.", "The bridge was opened in 1871 after nine years.",
           "Most of the grain leaves the country through this harbour."],
    "de": ["Der Fluss entspringt in den Hügeln nördlich der Altstadt.", "Die Brücke wurde 1871 eröffnet.",
           "Das meiste Getreide verlässt das Land über diesen Hafen."],
    "zh": ["这条河发源于老城北边的山丘。", "这座桥于1871年建成通车。", "大部分粮食经由这个港口运出。"],
}


def _inputs(count: int, seed: int) -> list[FeatureInput]:
    rng = random.Random(seed)
    inputs = []
    for n in range(count):
        lang = rng.choice(list(SENTENCES))
        answer, reference = rng.choice(SENTENCES[lang]), rng.choice(SENTENCES[lang])
        cited = tuple(rng.sample([f"d{k}" for k in range(8)], rng.randint(0, 4)))
        inputs.append(FeatureInput(str(n), "sys", lang, "Which one?", "ok", answer, answer, answer, cited,
                                   frozenset(f"d{k}" for k in range(rng.randint(1, 3))), {}, reference, False, "ok",
                                   0.9, 0.05, 0.0))
    return inputs


def _batched(inputs: list[FeatureInput]) -> int:
    return sum(len(compute(inputs)) for compute in DETERMINISTIC.values())


def _loop(inputs: list[FeatureInput]) -> int:
    """The same features, one response at a time, set-up included each time."""
    import ir_measures
    import sacrebleu
    from rouge_score import rouge_scorer

    from tasks.inference.refusals import is_refusal
    from tasks.text.segment import tokenize

    class Words:
        def __init__(self, lang: str) -> None:
            self.lang = lang

        def tokenize(self, text: str) -> list[str]:
            return [token.lower() for token in tokenize(text, self.lang)]

    done = 0
    for item in inputs:
        qrels = [ir_measures.Qrel("q", doc, 1) for doc in item.relevant]
        run = [ir_measures.ScoredDoc("q", doc, float(-rank)) for rank, doc in enumerate(item.citations)]
        ir_measures.calc_aggregate([ir_measures.AP @ 10, ir_measures.R @ 10], qrels, run)
        sacrebleu.sentence_bleu(item.answer_text, [item.reference], tokenize=bleu_tokenizer(item.lang))
        rouge_scorer.RougeScorer(["rougeL"], tokenizer=Words(item.lang)).score(item.reference, item.answer_text)
        is_refusal(item.answer_text, item.lang)
        done += len(DETERMINISTIC)
    return done


def _battles(seed: int) -> tuple[list[Battle], np.ndarray]:
    rng = np.random.default_rng(seed)
    strengths = np.linspace(-2.0, 2.0, 19)
    battles = []
    for query in range(50):
        for i, j in itertools.combinations(range(19), 2):
            for first, second in ((i, j), (j, i)):
                p = 1.0 / (1.0 + np.exp(strengths[second] - strengths[first]))
                draw = rng.random()
                winner = "a" if draw < 0.9 * p else "tie" if draw < 0.9 * p + 0.1 else "b"
                battles.append(Battle(str(query), "en", f"m{first:02d}", f"m{second:02d}", winner))
    return battles, strengths


def _refit(battles: list[Battle], tournaments: int, seed: int) -> None:
    """Each tournament: resample queries, rebuild the raw battle rows, fit a logistic regression from scratch."""
    from sklearn.linear_model import LogisticRegression

    models = sorted({b.model_a for b in battles} | {b.model_b for b in battles})
    index = {m: n for n, m in enumerate(models)}
    decisive = [b for b in battles if b.winner != "tie"]
    by_query: dict[str, list[Battle]] = {}
    for battle in decisive:
        by_query.setdefault(battle.query_id, []).append(battle)
    queries = sorted(by_query)
    rng = np.random.default_rng(seed)
    for _ in range(tournaments):
        sample = [b for q in rng.choice(queries, size=len(queries)) for b in by_query[q]]
        design = np.zeros((len(sample), len(models)))
        outcome = np.zeros(len(sample))
        for row, battle in enumerate(sample):
            design[row, index[battle.model_a]], design[row, index[battle.model_b]] = 1.0, -1.0
            outcome[row] = battle.winner == "a"
        LogisticRegression(fit_intercept=False, C=1e6, tol=1e-6, max_iter=1000).fit(design, outcome)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--responses", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--refit-tournaments", type=int, default=10)
    args = parser.parse_args()
    inputs = _inputs(args.responses, seed=3)
    say(f"features: {len(DETERMINISTIC)} deterministic features x {args.responses} responses")
    batched = best_of("batched (the stage)", args.repeat, lambda: _batched(inputs))
    loop = best_of("per-response loop", 1, lambda: _loop(inputs))

    battles, strengths = _battles(seed=0)
    say(f"Bradley-Terry: 19 systems, {len(battles)} battles, 200 tournaments")
    bootstrap = best_of("bootstrap (deduplicated, warm-started)", args.repeat, lambda: ratings(battles, bootstrap=200))
    refit = best_of(f"refit from raw battles ({args.refit_tournaments} tournaments)", 1,
                    lambda: _refit(battles, args.refit_tournaments, seed=0))
    refit_200 = refit.seconds * 200 / args.refit_tournaments
    fitted = [bootstrap.result["models"][f"m{n:02d}"]["rating"] for n in range(19)]
    emit("arena",
         {"responses": args.responses, "features": len(DETERMINISTIC),
          "batched_responses_per_s": round(per_second(args.responses, batched.seconds)),
          "loop_responses_per_s": round(per_second(args.responses, loop.seconds)),
          "battles": len(battles), "bt_refit_200_s_estimated": round(refit_200, 2),
          "bt_rating_vs_truth_corr": round(float(np.corrcoef(fitted, strengths)[0, 1]), 4)},
         {"features_vs_loop": round(loop.seconds / batched.seconds, 1),
          "bt_bootstrap_s": round(bootstrap.seconds, 3), "bt_vs_refit": round(refit_200 / bootstrap.seconds, 1)})


if __name__ == "__main__":
    main()
