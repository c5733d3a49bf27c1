"""How far judges agree on the responses they all rated: Cohen's κ per pair, Fleiss' κ per panel.

An LLM judge stands in for people, so how often it agrees with another judge
— and with people, whose verdicts ``babelbench import verdicts`` stores as
judge ``human:<name>`` (:mod:`tasks.imports.verdicts`) — says how much its
verdicts can be trusted.  Raw agreement alone flatters judges when most
answers are wrong (two judges saying "no" to everything agree 90% of the
time on a 90%-wrong benchmark), so κ discounts the agreement chance alone
would give.

Only verdicts that exist count: a judge whose verdict on a response is
missing (its call failed, its reply was unreadable, the budget stopped it)
leaves that response out of its pairs, and it is counted as ``missing``
among the responses both (every) judges were asked about.  A failed response
(``no_response``) was never judged and is not counted at all.  A panel's
Fleiss κ reads only the responses every member rated.  Intervals resample
instances (a question in one language), whose responses from several models
move together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from tasks.errors import ConfigError
from tasks.metrics.bootstrap import clustered_statistic_ci
from tasks.metrics.score import ALL
from tasks.warehouse.db import Warehouse

#: The judge-name prefix of a person's verdicts (``babelbench import verdicts``): a judge no registry model is.
HUMAN = "human:"
#: Why κ has no value where every verdict is the same: chance agreement is then 1 and κ is 0/0.
SAME_CLASS = "every verdict is the same: chance agreement is 1, so κ is 0/0 (raw agreement says they agree)"
NO_COMMON = "no response has a verdict of every judge"


def cohen_agreement(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's (1960) observed and chance agreement (p_o, p_e) of each 2×2 table, given flat as (yes·yes, yes·no,
    no·yes, no·no) counts in the last axis (rows: the first judge): p_o is the share on the diagonal, p_e the
    agreement expected from each judge's own shares of yes and no."""
    table = np.asarray(tables, dtype=float).reshape(*np.shape(tables)[:-1], 2, 2)
    n = table.sum(axis=(-2, -1))
    return (np.trace(table, axis1=-2, axis2=-1) / n,
            (table.sum(axis=-1) * table.sum(axis=-2)).sum(axis=-1) / n**2)


def fleiss_agreement(sums: np.ndarray, raters: int) -> tuple[np.ndarray, np.ndarray]:
    """Fleiss' (1971) observed and chance agreement (P̄, P_e) for yes/no verdicts of ``raters`` judges on every
    response, from the last axis's sums over responses (N responses, Σ yes_i, Σ yes_i²), where yes_i counts the
    judges saying yes to response i: P_i = (yes_i² + no_i² − m) / (m(m − 1)) is the share of agreeing judge pairs
    on a response and P̄ its mean; P_e = p² + (1 − p)² with p the share of yes among all verdicts."""
    data = np.asarray(sums, dtype=float)
    n, yes, yes_squared = data[..., 0], data[..., 1], data[..., 2]
    m = float(raters)
    share = yes / (n * m)
    # Σ (yes² + (m − yes)² − m) = 2 Σ yes² − 2m Σ yes + N(m² − m)
    return (2 * yes_squared - 2 * m * yes + n * (m * m - m)) / (m * (m - 1)) / n, share**2 + (1 - share) ** 2


def kappa(observed: np.ndarray, chance: np.ndarray) -> np.ndarray:
    """κ = (observed − chance) / (1 − chance): the share of the agreement beyond chance that the judges reach;
    NaN where chance agreement is 1 (every verdict the same class: 0/0).

    Written out rather than taken from scikit-learn's ``cohen_kappa_score`` (the tests' oracle): that takes label
    vectors one call at a time (about 3 ms each), and a bootstrap needs κ of a thousand reweighted tables at once.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def cohen_kappa(tables: np.ndarray) -> np.ndarray:
    """Cohen's κ of each table (see :func:`cohen_agreement`)."""
    return kappa(*cohen_agreement(tables))


def fleiss_kappa(sums: np.ndarray, raters: int) -> np.ndarray:
    """Fleiss' κ of each row of sums (see :func:`fleiss_agreement`)."""
    return kappa(*fleiss_agreement(sums, raters))


@dataclass(frozen=True)
class Response:
    """One judged response: its instance (the bootstrap's cluster), language, and each judge's verdict (None:
    the judge was asked and gave none)."""

    instance_id: str
    lang: str
    verdicts: dict[str, str | None]


def judged_responses(wh: Warehouse, benchmark: str) -> dict[str, list[Response]]:
    """Per judge kind, every response some judge was asked about (failed responses, never judged, left out)."""
    rows = wh.query(
        "SELECT j.kind, r.lang, j.instance_id, j.model, j.judge, CASE WHEN j.status = 'ok' THEN j.verdict END"
        " FROM judgements j JOIN responses r USING (benchmark, instance_id, model)"
        " WHERE j.benchmark = ? AND j.status <> 'no_response' ORDER BY ALL", [benchmark])
    grouped: dict[tuple[str, str, str], Response] = {}
    for kind, lang, instance_id, model, judge, verdict in rows:
        response = grouped.setdefault((kind, instance_id, model), Response(instance_id, lang, {}))
        response.verdicts[judge] = verdict
    by_kind: dict[str, list[Response]] = defaultdict(list)
    for (kind, _, _), response in grouped.items():
        by_kind[kind].append(response)
    return dict(by_kind)


def judge_agreement(wh: Warehouse, benchmark: str, *, seed: int = 0, resamples: int = 1000) -> list[dict[str, Any]]:
    """The agreement rows of a benchmark's judges (see :func:`agreement_rows`), every kind of judge it has."""
    if not wh.scalar("SELECT count(*) FROM qa_benchmarks WHERE benchmark = ?", [benchmark]):
        raise ConfigError(f"no benchmark {benchmark!r}")
    return stored_agreement(wh, benchmark, seed=seed, resamples=resamples)


def stored_agreement(wh: Warehouse, benchmark: str, *, seed: int = 0, resamples: int = 1000) -> list[dict[str, Any]]:
    """The agreement rows of whatever verdicts are stored under ``benchmark`` (none: no rows)."""
    return [row for kind, responses in sorted(judged_responses(wh, benchmark).items())
            for row in agreement_rows(kind, responses, seed=seed, resamples=resamples)]


def agreement_rows(kind: str, responses: Sequence[Response], *, seed: int = 0,
                   resamples: int = 1000) -> list[dict[str, Any]]:
    """Over all languages, then per language: a Cohen row for every pair of judges asked about a common
    response, and a Fleiss row for the model judges together and, when people rated too, for everyone —
    each only with three judges or more (with two, the pair's row says it).  A row has ``n`` (responses with
    every verdict), ``missing`` (responses every judge was asked about that lack one), raw ``agreement``, and
    ``kappa`` with its 95% interval, None where undefined (``note`` says why)."""
    judges = sorted({judge for response in responses for judge in response.verdicts})
    models = [judge for judge in judges if not judge.startswith(HUMAN)]
    panels = [group for group in (models, judges if models != judges else []) if len(group) >= 3]
    out = []
    for lang in [ALL, *sorted({response.lang for response in responses})]:
        chosen = [r for r in responses if lang in (ALL, r.lang)]
        for group in [*map(list, combinations(judges, 2)), *panels]:
            asked = [r for r in chosen if all(judge in r.verdicts for judge in group)]
            if asked:
                out.append(_row(kind, lang, group, asked, seed, resamples))
    return out


def _row(kind: str, lang: str, judges: list[str], asked: list[Response], seed: int, resamples: int) -> dict[str, Any]:
    rated = [r for r in asked if None not in (r.verdicts[judge] for judge in judges)]
    row: dict[str, Any] = {"kind": kind, "lang": lang, "measure": "cohen" if len(judges) == 2 else "fleiss",
                           "judges": judges, "n": len(rated), "missing": len(asked) - len(rated),
                           "agreement": None, "kappa": None, "ci_low": None, "ci_high": None, "note": NO_COMMON}
    if not rated:
        return row
    yes = [[r.verdicts[judge] == "yes" for judge in judges] for r in rated]
    m = len(judges)
    if m == 2:
        tables = _per_instance(rated, [[a and b, a and not b, b and not a, not (a or b)] for a, b in yes])
        observed, statistic = cohen_agreement(tables.sum(axis=0))[0], cohen_kappa
    else:  # a panel's raw agreement: the mean share of agreeing judge pairs on a response (Fleiss's P̄)
        tables = _per_instance(rated, [[1, sum(said), sum(said) ** 2] for said in yes])
        observed, statistic = fleiss_agreement(tables.sum(axis=0), m)[0], lambda sums: fleiss_kappa(sums, m)
    value = clustered_statistic_ci(tables, statistic, n_resamples=resamples, seed=seed)
    row["agreement"] = float(observed)
    row["kappa"], row["ci_low"], row["ci_high"] = value
    row["note"] = SAME_CLASS if value[0] is None else None
    return row


def _per_instance(rated: Sequence[Response], counts: Iterable[Sequence[float]]) -> np.ndarray:
    """Each response's counts summed per instance: one row per bootstrap cluster."""
    clusters: dict[str, np.ndarray] = {}
    for response, row in zip(rated, counts, strict=True):
        clusters[response.instance_id] = clusters.get(response.instance_id, 0) + np.asarray(row, dtype=float)
    return np.stack(list(clusters.values()))
