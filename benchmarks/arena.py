"""Arena speed: batched features against a per-response loop, and the Bradley–Terry bootstrap against refitting.

* ``features_vs_loop``: the deterministic features' responses/s as the
  features stage computes them ÷ a plain loop computing the same values
  response by response with the same libraries — goal ≥ 10.  The stage's
  side is its real path, :func:`tasks.features.compute.deterministic_values`
  for each feature: at the default 3,000 responses every feature is one
  in-process batch (BLEU and ROUGE-L go to the Dask cluster only from two
  tasks of ``CHUNK`` responses on; ``stage_tasks`` says how many it used);
  in each batch one trec_eval run for every response that cites something,
  each distinct text tokenised once for BLEU and segmented once for
  ROUGE-L, BLEU's n-grams counted and clipped in numpy and scored by
  ``compute_bleu``'s arithmetic over the whole batch (equal to it),
  ROUGE-L's LCS by rapidfuzz, the cycle collector paused.  The cluster is
  started only when the stage would send work to it, as a features flow
  does: an idle local cluster beside an in-process batch slowed it by about
  a quarter on 2 cores.
  The loop is one process with each library's per-item call and what any
  plain loop would hoist out of it: pytrec_eval per response, one sacreBLEU
  ``BLEU`` per language and its ``sentence_score``, one rouge-score
  ``RougeScorer`` per language and its
  ``score``.  ``features_vs_loop_cpu`` divides CPU seconds instead, the
  workers' included: the work per CPU second, steadier on a busy machine and
  free of the parallelism.  Inputs: instances in English, German and Chinese
  whose reference answer (1-3 sentences of 8-28 words) is answered by
  ``SYSTEMS`` systems, each answer paraphrasing part of the reference; every
  timed run gets freshly generated inputs, so none profits from a cache an
  earlier run filled (sacreBLEU's tokenizers memoise the lines they have seen),
  and both sides are the best of ``--repeat`` runs;
* ``overlap_dask_vs_inprocess`` (Dask mode only): BLEU and ROUGE-L of
  ``--dask-responses`` responses (default two tasks' worth) as the stage sends
  them to the cluster (a local one with ``min(4, cores)`` worker processes
  unless ``DASK_SCHEDULER_ADDRESS`` says otherwise) ÷ the same in one batch in
  this process: above 1 when the cluster pays for its round trips;
* ``bt_bootstrap_s``: 19 systems, ~17,000 battles (every pair on 50 queries in
  both orders), 200 tournaments — goal ≤ 1 s;
* ``bt_vs_refit``: that time ÷ what refitting each tournament from its raw,
  resampled battles with a general-purpose solver takes (scikit-learn's
  logistic regression on ±1 design rows, as public arena code does; timed on
  ``--refit-tournaments`` tournaments and scaled to 200) — goal ≥ 10.

Run: ``.venv/bin/python benchmarks/arena.py [--responses 3000] [--repeat 3] [--dask-responses N]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pickle
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.arena.bradley_terry import Battle, ratings  # noqa: E402
from tasks.compute import mode, parallelism, paused_gc  # noqa: E402
from tasks.features.deterministic import DETERMINISTIC, OVERLAP, bleu_tokenizer, rouge_words  # noqa: E402
from tasks.features.inputs import FeatureInput  # noqa: E402
from tasks.features.compute import CHUNK, _compute_chunk, _tasks, deterministic_values, distributes  # noqa: E402
from tasks.inference.refusals import is_refusal  # noqa: E402

#: Per language, words by falling frequency: sentences drawn from them are Zipf-like and almost never repeat.
WORDS = {
    "en": ("the of in and a to was is by its from at with on for after as north south river bridge town harbour "
           "city old new first built opened rises flows through hills grain country railway station market church "
           "tower wall council king queen trade war fire flood century years nine twelve 1871 1923 1956 population "
           "thousand people road coast island mountain lake valley east west rebuilt destroyed named founded "
           "largest longest oldest museum university school factory mill canal port fishing"),
    "de": ("der die das und in von zu mit den dem im ist war wurde nach auf für als am bei nördlich südlich Fluss "
           "Brücke Stadt Hafen alte neue erste gebaut eröffnet entspringt fließt durch Hügel Getreide Land Bahnhof "
           "Markt Kirche Turm Mauer Rat König Königin Handel Krieg Brand Hochwasser Jahrhundert Jahre neun zwölf "
           "1871 1923 1956 Einwohner tausend Menschen Straße Küste Insel Berg See Tal Osten Westen wiederaufgebaut "
           "zerstört benannt gegründet größte längste älteste Museum Universität Schule Fabrik Mühle Kanal"),
    "zh": ("的 在 是 和 了 于 由 这条 这座 河 桥 城市 港口 老城 北边 南边 山丘 发源 流经 建成 通车 开放 粮食 铁路 车站 市场 "
           "教堂 塔楼 城墙 议会 国王 王后 贸易 战争 火灾 洪水 世纪 年 九 十二 1871 1923 1956 人口 千 人 道路 海岸 "
           "岛屿 山脉 湖泊 山谷 东部 西部 重建 摧毁 命名 创立 最大 最长 最古老 博物馆 大学 学校 工厂 磨坊 运河"),
}
SYSTEMS = 10  # responses per instance: the systems answering it share its reference


def _words(rng: random.Random, lang: str, count: int) -> list[str]:
    words = WORDS[lang].split()
    return rng.choices(words, weights=[1 / (rank + 1) for rank in range(len(words))], k=count)


def _sentence(rng: random.Random, lang: str) -> list[str]:
    """8-28 words: about 18 on average, as in encyclopaedic prose."""
    return _words(rng, lang, rng.randint(8, 28))


def _text(sentences: list[list[str]], lang: str) -> str:
    if lang == "zh":
        return "".join("".join(words) + "。" for words in sentences)
    return " ".join(f"{words[0][:1].upper()}{' '.join(words)[1:]}." for words in sentences)


def _paraphrase(rng: random.Random, sentence: list[str], lang: str) -> list[str]:
    """A system's rendering of a reference sentence: most words kept, some replaced, dropped or added."""
    said = []
    for word in sentence:
        roll = rng.random()
        if roll < 0.7:
            said.append(word)
        elif roll < 0.85:
            said.extend(_words(rng, lang, 1))
        elif roll < 0.95:
            said.extend([word, *_words(rng, lang, 1)])
    return said


def _inputs(count: int, seed: int) -> list[FeatureInput]:
    """Instances with a reference answer of 1-3 sentences, each answered by ``SYSTEMS`` systems.

    A system paraphrases some of the reference's sentences and adds sentences of
    its own, so answers overlap their reference partly and texts almost never repeat.
    """
    rng = random.Random(seed)
    inputs = []
    for n in range(count):
        if n % SYSTEMS == 0:
            lang = rng.choice(list(WORDS))
            reference = [_sentence(rng, lang) for _ in range(rng.randint(1, 3))]
            relevant = frozenset(f"d{k}" for k in range(rng.randint(1, 3)))
        said = [_paraphrase(rng, sentence, lang) for sentence in reference if rng.random() < 0.8]
        if not said or rng.random() < 0.5:
            said.append(_sentence(rng, lang))  # a sentence of the system's own
        answer = _text(said, lang)
        cited = tuple(rng.sample([f"d{k}" for k in range(8)], rng.randint(0, 4)))
        inputs.append(FeatureInput(str(n // SYSTEMS), f"sys{n % SYSTEMS}", lang, "Which one?", "ok", answer, answer,
                                   answer, cited, relevant, {}, _text(reference, lang), False, "ok", 0.9, 0.05, 0.0))
    return inputs


def _batched(inputs: list[FeatureInput]) -> dict[str, float]:
    """Each feature over every response as its stage cell computes it; the seconds each took."""
    seconds = {}
    for name in DETERMINISTIC:
        start = time.perf_counter()
        deterministic_values(inputs, name)
        seconds[name] = time.perf_counter() - start
    return seconds


def _workers_cpu(on_dask: bool) -> float:
    """CPU seconds the Dask workers have spent so far (none when the stage runs in-process)."""
    if not on_dask:
        return 0.0
    from distributed import default_client

    return sum(spent.user + spent.system for spent in default_client().run(os.times).values())


def _stage(inputs: list[FeatureInput], on_dask: bool) -> tuple[dict[str, float], float]:
    """:func:`_batched`, and the CPU seconds the workers spent on it."""
    before = _workers_cpu(on_dask)
    seconds = _batched(inputs)
    return seconds, _workers_cpu(on_dask) - before


def _warm_up_workers(inputs: list[FeatureInput]) -> None:
    """Starts the cluster; every worker process imports the libraries and loads the segmenters."""
    from distributed import default_client

    parallelism()
    client = default_client()
    pairs: dict[str, list[tuple[str, str]]] = {}
    for item in inputs:
        pairs.setdefault(item.lang, []).append((item.answer_text, item.reference or ""))
    task = pickle.dumps(pairs)
    client.gather([client.submit(_compute_chunk, task, name=name, workers=[worker], pure=False)
                   for worker in client.scheduler_info()["workers"] for name in OVERLAP])


def _stage_tasks(responses: int) -> int:
    """How many Dask tasks the stage sends each overlap feature of ``responses`` responses to (0: in-process);
    every benchmark response has a reference, so each is a pair."""
    return len(_tasks({"en": [("", "")] * responses})) if distributes(responses) else 0


def _in_process(inputs: list[FeatureInput], name: str) -> list[object]:
    """The feature in one batch here, as the stage computes a batch too small for Dask."""
    with paused_gc():
        return list(DETERMINISTIC[name](inputs))


def _overlap_on_dask(responses: int, repeat: int) -> dict[str, float | int | None]:
    """BLEU and ROUGE-L of ``responses`` responses through the stage's Dask tasks, and in one batch here."""
    if mode() == "inline":
        return {"dask_responses": responses, "overlap_dask_s": None, "overlap_inprocess_s": None}
    _warm_up_workers(_inputs(SYSTEMS * 10, seed=0))
    fresh = [_inputs(responses, seed) for seed in range(100, 100 + 2 * repeat)]

    def overlap(run: Callable[[list[FeatureInput], str], object]) -> None:
        inputs = fresh.pop()
        for name in sorted(OVERLAP):
            run(inputs, name)

    dask = best_of(f"BLEU and ROUGE-L, {responses} responses, {_stage_tasks(responses)} Dask tasks", repeat,
                   lambda: overlap(deterministic_values))
    here = best_of(f"BLEU and ROUGE-L, {responses} responses, one batch in-process", repeat,
                   lambda: overlap(_in_process))
    return {"dask_responses": responses, "dask_tasks": _stage_tasks(responses),
            "overlap_dask_s": round(dask.seconds, 3), "overlap_inprocess_s": round(here.seconds, 3)}


def _loop(inputs: list[FeatureInput]) -> int:
    """The same features, one response at a time with each library's own per-item call."""
    from pytrec_eval import RelevanceEvaluator
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU

    bleus = {lang: BLEU(tokenize=bleu_tokenizer(lang), effective_order=True) for lang in WORDS}
    scorers = {lang: rouge_scorer.RougeScorer(["rougeL"], tokenizer=_RougeWords(lang)) for lang in WORDS}
    done = 0
    for item in inputs:
        ranking = {doc: float(-rank) for rank, doc in enumerate(dict.fromkeys(item.citations))}
        RelevanceEvaluator({"q": dict.fromkeys(item.relevant, 1)}, {"map_cut.10", "recall.10"}).evaluate({"q": ranking})
        bleus[item.lang].sentence_score(item.answer_text, [item.reference])
        scorers[item.lang].score(item.reference, item.answer_text)
        is_refusal(item.answer_text, item.lang)
        done += len(DETERMINISTIC)
    return done


@dataclass(frozen=True)
class _RougeWords:
    """rouge-score's tokenizer interface over the words the feature uses."""

    lang: str

    def tokenize(self, text: str) -> list[str]:
        return rouge_words(text, self.lang)


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
    parser.add_argument("--dask-responses", type=int, default=2 * CHUNK,
                        help="responses for the Dask-vs-in-process overlap comparison (0: skip it)")
    args = parser.parse_args()
    say(f"features: {len(DETERMINISTIC)} deterministic features x {args.responses} responses")
    warm_up = _inputs(SYSTEMS * 10, seed=0)
    # the cluster runs only where the stage would start it: an idle local cluster slows this process's Python
    on_dask = _stage_tasks(args.responses) > 0
    if on_dask:
        _warm_up_workers(warm_up)
    _batched(warm_up)
    _loop(warm_up)
    # every timed run gets inputs of its own: none profits from what an earlier one left in a cache
    fresh = [_inputs(args.responses, seed) for seed in range(1, 2 * args.repeat + 1)]
    plan = f"{_stage_tasks(args.responses)} Dask tasks" if on_dask else "in-process"
    batched = best_of(f"batched (the stage, {plan})", args.repeat, lambda: _stage(fresh.pop(), on_dask))
    seconds, workers_cpu = batched.result
    say("  where the batched time goes: " + ", ".join(f"{name} {spent:.3f} s" for name, spent in seconds.items()))
    loop = best_of("per-response loop", args.repeat, lambda: _loop(fresh.pop()))  # timed like the stage's side
    dask = _overlap_on_dask(args.dask_responses, args.repeat) if args.dask_responses else {}

    battles, strengths = _battles(seed=0)
    say(f"Bradley-Terry: 19 systems, {len(battles)} battles, 200 tournaments")
    bootstrap = best_of("bootstrap (deduplicated, warm-started)", args.repeat, lambda: ratings(battles, bootstrap=200))
    refit = best_of(f"refit from raw battles ({args.refit_tournaments} tournaments)", 1,
                    lambda: _refit(battles, args.refit_tournaments, seed=0))
    refit_200 = refit.seconds * 200 / args.refit_tournaments
    fitted = [bootstrap.result["models"][f"m{n:02d}"]["rating"] for n in range(19)]
    emit("arena",
         {"responses": args.responses, "features": len(DETERMINISTIC), "compute": mode(),
          "stage_tasks": _stage_tasks(args.responses), **dask,
          "batched_responses_per_s": round(per_second(args.responses, batched.seconds)),
          "loop_responses_per_s": round(per_second(args.responses, loop.seconds)),
          "features_vs_loop_cpu": round(loop.cpu_seconds / (batched.cpu_seconds + workers_cpu), 1),
          "battles": len(battles), "bt_refit_200_s_estimated": round(refit_200, 2),
          "bt_rating_vs_truth_corr": round(float(np.corrcoef(fitted, strengths)[0, 1]), 4)},
         {"features_vs_loop": round(loop.seconds / batched.seconds, 1),
          "overlap_dask_vs_inprocess": (round(dask["overlap_inprocess_s"] / dask["overlap_dask_s"], 2)
                                        if dask.get("overlap_dask_s") else None),
          "bt_bootstrap_s": round(bootstrap.seconds, 3), "bt_vs_refit": round(refit_200 / bootstrap.seconds, 1)})


if __name__ == "__main__":
    main()
