"""The report: what it shows of an arena (unbounded ratings, failures, missing features) and of the metrics, and
where it goes — the MLflow run of the benchmark's latest completed evaluation, and a Prefect key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from deployments.screenshots import CHROMIUM_FLAGS
from tasks.arena.report import evaluation_run
from tasks.stages.reporting import artifact_key
from tasks.warehouse.db import Warehouse
from tests.support.browser import chromium


def _rendered_dom(page: Path, profile: Path) -> str:
    """The DOM headless Chromium (Debian's ``chromium``) built from a local page: a fresh profile, and no background
    service that would reach the network (:func:`tests.support.browser.chromium`: skipped, saying why, without Chromium)."""
    binary = chromium()
    profile.mkdir(parents=True)
    return subprocess.run([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=True).stdout


def test_the_report_belongs_to_the_latest_completed_evaluation_of_its_benchmark(home: Path) -> None:
    home.mkdir(parents=True)
    runs = [  # run id, flow, started, status, benchmark, MLflow run
        ("r1", "evaluate", "2025-01-01", "completed", "m", "ml-evaluate-old"),
        ("r2", "arena", "2025-01-02", "completed", "m", "ml-arena"),
        ("r3", "evaluate", "2025-01-03", "failed", "m", "ml-evaluate-failed"),
        ("r4", "report", "2025-01-04", "completed", "m", "ml-report"),
        ("r5", "evaluate", "2025-01-05", "completed", "other", "ml-other"),
    ]
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany("INSERT INTO runs (run_id, flow, started_at, status, params, code_version, mlflow_run_id)"
                            " VALUES (?, ?, ?, ?, ?, 'v', ?)",
                            [[r, flow, started, status, json.dumps({"benchmark": benchmark}), ml]
                             for r, flow, started, status, benchmark, ml in runs])
        assert evaluation_run(wh, "m") == "ml-arena"
        assert evaluation_run(wh, "other") == "ml-other"
        assert evaluation_run(wh, "unknown") is None


def test_a_prefect_artifact_key_has_only_lowercase_letters_digits_and_dashes() -> None:
    assert artifact_key("report", "MIRAGE_de.v2 (dev)") == "report-mirage-de-v2-dev"
    assert artifact_key("report", "m") == "report-m"


def _cells(html: str, table: str) -> list[list[str]]:
    """The text of each body row's cells of the table with class ``table`` (Python's own HTML parser)."""
    from html.parser import HTMLParser

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.inside = self.body = self.cell = False

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag == "table":
                self.inside = (dict(attrs).get("class") == table)
            self.body = self.body or (self.inside and tag == "tbody")
            if self.body and tag == "tr":
                self.rows.append([])
            if self.body and tag == "td":
                self.cell = True
                self.rows[-1].append("")

        def handle_endtag(self, tag: str) -> None:
            if tag == "td":
                self.cell = False
            if tag == "tbody":
                self.body = self.inside = False

        def handle_data(self, data: str) -> None:
            if self.cell:
                self.rows[-1][-1] += data

    parser = Rows()
    parser.feed(html)
    return [[" ".join(cell.split()) for cell in row] for row in parser.rows]


def test_the_report_shows_unbounded_ratings_failures_and_missing_features(home: Path, tmp_path: Path) -> None:
    from tasks.arena.report import write_report

    home.mkdir(parents=True)
    columns = ("(benchmark, judge, lang, model, rating, ci_low, ci_high, rank_low, rank_high, n_battles, ties,"
               " consistency, first_position_rate, fingerprint, predicted, unbounded, failed_queries)")
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany(f"INSERT INTO arena_ratings {columns} VALUES ('m', 'judge', 'all', ?, ?, ?, ?, ?, ?, 24,"
                            " 'drop', 0.9, 0.5, 'fp', FALSE, ?, ?)", [
                                ["oracle", None, None, None, 1, 1, "high", 0],  # never lost
                                ["extractive", 0.4, 0.1, None, 2, 3, "high", 0],  # open above in the bootstrap
                                ["local", -0.4, -0.7, -0.1, 2, 3, None, 5],
                                ["abstain", None, None, None, 4, 4, "low", 12]])
            cur.execute("INSERT INTO leaderboard (benchmark, setting, lang, subset, model, metric, value, ci_low,"
                        " ci_high, n, mode, judges, fingerprint, answered, failed, judge_failed) VALUES ('m', 'rag',"
                        " 'all', 'all', 'local', 'accuracy', 40.0, 30.0, 50.0, 20, 'panel', ['j'], 'fp', 17, 3, 2)")
            cur.execute("INSERT INTO leaderboard (benchmark, setting, lang, subset, model, metric, value, ci_low,"
                        " ci_high, n, mode, judges, fingerprint) VALUES ('m', 'rag', 'all', 'all', 'oracle',"
                        " 'accuracy', 100.0, 100.0, 100.0, 20, 'panel', ['j'], 'fp')")  # written before the counts
            cur.executemany("INSERT INTO features VALUES ('m', ?, ?, ?, ?, ?, NULL, 'fp')", [
                ["i1", "local", "support_entailment", None, "not_applicable"],
                ["i2", "local", "support_entailment", None, "no_response"],
                ["i1", "local", "citation_map_at_10", 0.5, "ok"],
                ["i1", "oracle", "support_entailment", 0.9, "ok"]])
        out = tmp_path / "report.html"
        write_report(wh, "m", out)
    html = out.read_text(encoding="utf-8")
    assert _cells(html, "ratings") == [
        ["oracle", "+∞ (never lost)", "1", "24", "0"],
        ["extractive", "+0.400", "[+0.100, +∞]", "2–3", "24", "0"],
        ["local", "-0.400", "[-0.700, -0.100]", "2–3", "24", "5"],
        ["abstain", "−∞ (never won)", "4", "24", "12"]]
    assert 'data-system="oracle" class="unbounded" data-unbounded="high"' in html
    assert "counts as that system's loss against every system that answered it" in html
    assert _cells(html, "missing-features") == [["local", "support_entailment", "2"]]
    # n, answered, failed, judge failed; "–" where the row predates the counts
    assert _cells(html, "metrics") == [
        ["rag", "all", "local", "accuracy", "40.000", "[30.000, 50.000]", "20", "17", "3", "2"],
        ["rag", "all", "oracle", "accuracy", "100.000", "[100.000, 100.000]", "20", "–", "–", "–"]]
    dom = _rendered_dom(out, tmp_path / "chromium-profile")
    # the browser built the rows and the interval plot (no rating per language here, so no heatmap)
    assert '<tr data-system="abstain" class="unbounded" data-unbounded="low">' in dom and dom.count("<svg") == 1


def _paragraph(html: str, name: str) -> str:
    """The text of the first ``<p class="name">``, whitespace folded."""
    import re

    found = re.search(rf'<p class="{name}">(.*?)</p>', html, re.DOTALL)
    assert found, name
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_the_report_says_what_the_judge_statistics_count_and_why_the_surrogate_is_not_validated(
        home: Path, tmp_path: Path) -> None:
    from tasks.arena.report import write_report
    from tasks.arena.standings import RATING_COLUMNS

    home.mkdir(parents=True)
    # a judge that tied every pair it saw (no decisive verdict: no first-position rate), 8 forfeits, 2 failed calls
    report = {"systems": ["a", "b", "c"], "features": ["citation_map_at_10"], "unbounded": ["d"], "predicted": {},
              "not_validated": "validation needs at least 5 systems with finite ratings; this run has 3",
              "leave_systems_out": None, "leave_languages_out": None, "pairwise": None, "importances": None,
              "ablations": None}
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany(f"INSERT INTO arena_ratings {RATING_COLUMNS} VALUES ('m', 'judge', 'all', ?, ?, ?, ?, ?,"
                            " ?, 30, 'half', 1.0, NULL, 'fp', FALSE, NULL, 0, 10, 0, 0, 8, 2, 'all')",
                            [[system, rating, rating - 0.5, rating + 0.5, 1, 3]
                             for system, rating in (("a", 0.1), ("b", 0.0), ("c", -0.1))])
            cur.execute("INSERT INTO surrogate_reports VALUES ('m', 'judge', ?, 'fp')", [json.dumps(report)])
        out = tmp_path / "report.html"
        write_report(wh, "m", out)
    html = out.read_text(encoding="utf-8")
    assert _paragraph(html, "consistency") == (
        "Judge consistency across both orders: 1.00 over 10 pairs it judged in both orders (0 order flips: the answer"
        " shown first won both times, rated as ties); answer shown first chosen in n/a of 0 decisive verdicts (0.5 ="
        " no position bias; n/a: nothing to count). Only the judge's own verdicts count: left out are 8 forfeits (a"
        " system without an answer, no judge call) and 2 battles without a verdict (a failed or budget-stopped call,"
        " an unreadable reply).")
    surrogate = _paragraph(html, "surrogate")
    assert surrogate.endswith("Not validated: validation needs at least 5 systems with finite ratings; this run has 3"
                              " (with fewer systems, even a perfect agreement with the judge's order could be chance).")
    assert "R²" not in html and "Most important feature" not in html and 'class="ablations"' not in html
    # the same arena with a validated surrogate: R², τ, the most important feature and the ablations
    validated = report | {"not_validated": None, "importances": {"citation_map_at_10": 0.7, "extra_refusal": 0.3},
                          "leave_systems_out": {"r2": 0.5, "r2_ci": [0.1, 0.9], "kendall_tau": 0.8},
                          "ablations": {"only_citation": {"features": ["citation_map_at_10"], "r2": 0.4, "r2_ci": None,
                                                          "reason": None},
                                        "only_llm": {"features": [], "r2": None, "r2_ci": None,
                                                     "reason": "no llm feature was computed"}}}
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.execute("UPDATE surrogate_reports SET report = ?", [json.dumps(validated)])
        write_report(wh, "m", out)
    html = out.read_text(encoding="utf-8")
    assert _paragraph(html, "surrogate").endswith("Held-out systems: R² 0.500 [0.10, 0.90], Kendall τ 0.800. Most"
                                                  " important feature: citation_map_at_10.")
    assert _cells(html, "ablations") == [["all features", "0.500 [0.10, 0.90]"], ["only citation", "0.400"]]
    assert 'title="no llm feature was computed">only llm</span>' in html


def test_the_report_shows_how_far_the_judges_agree(home: Path, tmp_path: Path) -> None:
    from tasks.arena.report import write_report

    home.mkdir(parents=True)
    # two judges on four answers: they agree on r1 (yes), r2 (no), r3 (yes) and differ on r4 (j1 yes, j2 no)
    verdicts = {"r1": ("yes", "yes"), "r2": ("no", "no"), "r3": ("yes", "yes"), "r4": ("yes", "no")}
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            for instance, said in verdicts.items():
                cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer,"
                            " citations, template, fingerprint) VALUES ('m', ?, 'sys', 'rag', 'de', 'ok', 'a', [], 't',"
                            " 'fp')", [instance])
                for judge, verdict in zip(("j1", "j2"), said, strict=True):
                    cur.execute("INSERT INTO judgements (benchmark, instance_id, model, judge, kind, verdict, status,"
                                " fingerprint) VALUES ('m', ?, 'sys', ?, 'correct', ?, 'ok', 'fp')",
                                [instance, judge, verdict])
        out = tmp_path / "report.html"
        write_report(wh, "m", out)
    [row] = _cells(out.read_text(encoding="utf-8"), "agreement")
    # p_o = 3/4; j1 says yes 3/4, j2 2/4: p_e = 3/4·2/4 + 1/4·2/4 = 1/2; κ = (3/4 − 1/2) / (1 − 1/2) = 0.5
    assert row[:7] == ["correct", "cohen", "j1 ~ j2", "4", "0", "0.750", "0.500"]


def test_the_report_shows_the_split_by_knowledge_cutoff_and_the_contamination_gap(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """served (cutoff 2026-10) and local (none) on a live benchmark: the leaderboard's window rows and the arena's
    window ratings, as stored, each shown per system with its interval and n; local says "unknown cutoff"."""
    from tasks.arena.report import write_report
    from tasks.arena.standings import RATING_COLUMNS
    from tasks.llm.registry import MODELS_ENV

    monkeypatch.delenv(MODELS_ENV, raising=False)
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(
        "models:\n  - {name: served, backend: baseline, model: extractive, knowledge_cutoff: 2026-10}\n"
        "  - {name: local, backend: baseline, model: abstain}\n")
    # served: 2 of 2 before its cutoff (100), 1 of 2 after (50), 0 of 1 unknown; the gap 100 − 50 = 50 points over
    # the 4 dated questions. local: no cutoff, its 5 questions all unknown (3 of 5 = 60), no gap.
    windows = [("served", "window:after_cutoff", "accuracy", 50.0, 0.0, 100.0, 2),
               ("served", "window:before_cutoff", "accuracy", 100.0, 100.0, 100.0, 2),
               ("served", "window:unknown", "accuracy", 0.0, None, None, 1),
               ("served", "window:before-after", "contamination_gap", 50.0, 0.0, 100.0, 4),
               ("local", "window:after_cutoff", "accuracy", None, None, None, 0),
               ("local", "window:before_cutoff", "accuracy", None, None, None, 0),
               ("local", "window:unknown", "accuracy", 60.0, 20.0, 100.0, 5),
               ("local", "window:before-after", "contamination_gap", None, None, None, 0)]
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany("INSERT INTO leaderboard (benchmark, setting, lang, subset, model, metric, value, ci_low,"
                            " ci_high, n, mode, judges, fingerprint) VALUES ('live', 'rag', 'all', ?, ?, ?, ?, ?, ?,"
                            " ?, 'panel', ['j'], 'fp')",
                            [[subset, model, metric, value, low, high, n]
                             for model, subset, metric, value, low, high, n in windows])
            # the arena: served, local and extractive overall; only served and extractive (both with a cutoff in
            # the arena's run) rated after their cutoffs, in the opposite order
            cur.executemany(f"INSERT INTO arena_ratings {RATING_COLUMNS} VALUES ('live', 'judge', 'all', ?, ?, ?, ?,"
                            " ?, ?, ?, 'drop', 1.0, 0.5, 'fp', FALSE, NULL, 0, 4, 8, 0, 0, 0, ?)",
                            [["served", 0.5, 0.1, 0.9, 1, 1, 12, "all"], ["extractive", 0.0, -0.4, 0.4, 2, 2, 12, "all"],
                             ["local", -0.5, -0.9, -0.1, 3, 3, 12, "all"],
                             ["extractive", 0.3, -0.2, 0.8, 1, 2, 4, "window:after_cutoff"],
                             ["served", -0.3, -0.8, 0.2, 1, 2, 4, "window:after_cutoff"]])
        out = tmp_path / "report.html"
        write_report(wh, "live", out)
    html = out.read_text(encoding="utf-8")
    assert _cells(html, "windows") == [
        ["rag", "local", "unknown cutoff", "after cutoff", "accuracy", "n/a", "n/a", "0"],
        ["rag", "local", "unknown cutoff", "before cutoff", "accuracy", "n/a", "n/a", "0"],
        ["rag", "local", "unknown cutoff", "unknown", "accuracy", "60.000", "[20.000, 100.000]", "5"],
        ["rag", "local", "unknown cutoff", "gap: before − after", "contamination_gap", "n/a", "n/a", "0"],
        ["rag", "served", "2026-10", "after cutoff", "accuracy", "50.000", "[0.000, 100.000]", "2"],
        ["rag", "served", "2026-10", "before cutoff", "accuracy", "100.000", "[100.000, 100.000]", "2"],
        ["rag", "served", "2026-10", "unknown", "accuracy", "0.000", "n/a", "1"],
        ["rag", "served", "2026-10", "gap: before − after", "contamination_gap", "50.000", "[0.000, 100.000]", "4"]]
    # the overall ratings table holds only the overall ratings; the window's are in their own table, best first
    assert [row[0] for row in _cells(html, "ratings")] == ["served", "extractive", "local"]
    assert _cells(html, "window-ratings") == [["after cutoff", "extractive", "+0.300", "[-0.200, +0.800]", "1–2", "4"],
                                              ["after cutoff", "served", "-0.300", "[-0.800, +0.200]", "1–2", "4"]]
    assert _paragraph(html, "no-windows") == "No window ratings: local (unknown cutoff)."
    dom = _rendered_dom(out, tmp_path / "chromium-profile")
    assert '<tr data-system="served" data-window="before-after" class="gap">' in dom
