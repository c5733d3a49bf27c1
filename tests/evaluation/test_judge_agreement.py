"""Judge agreement: Cohen's κ per pair and Fleiss' κ per panel (worked out by hand below), with seeded bootstrap
intervals over instances; a person's verdicts imported beside the judges', checked line by line, never in a panel.

The warehouse is written as inference and judging store it (a failed response has ``no_response`` judgements, a
judge whose call failed has a row without a verdict), then the person's verdicts are imported by the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from flows.cli import app
from tasks.errors import ConfigError
from tasks.imports.verdicts import import_verdicts
from tasks.metrics.agreement import SAME_CLASS, Response, agreement_rows, cohen_kappa, fleiss_kappa
from tasks.metrics.leaderboard import ScoringConfig, score_model
from tasks.warehouse.db import Warehouse

SETTING = "monolingual_retrieval"
PANEL = ["j1", "j2", "j3"]
# (item, lang) → (response status, {judge: verdict or a failed status}, the person's verdict)
RESPONSES = {
    ("q1", "en"): ("ok", {"j1": "yes", "j2": "yes", "j3": "yes"}, "yes"),
    ("q2", "en"): ("ok", {"j1": "yes", "j2": "no", "j3": "yes"}, "no"),  # the panel's 2 of 3: correct
    ("q3", "en"): ("ok", {"j1": "no", "j2": "no", "j3": "no"}, "no"),
    ("q4", "en"): ("ok", {"j1": "no", "j2": "yes", "j3": "call_failed"}, "no"),
    ("q1", "de"): ("ok", {"j1": "yes", "j2": "yes", "j3": "yes"}, "no"),
    ("q2", "de"): ("ok", {"j1": "no", "j2": "no", "j3": "yes"}, "no"),
    ("q3", "de"): ("ok", {"j1": "yes", "j2": "yes", "j3": "no"}, "yes"),
    ("q4", "de"): ("call_failed", {j: "no_response" for j in PANEL}, None),  # nothing to judge
}


def _instance(item: str, lang: str) -> str:
    return f"{item}:{SETTING}:{lang}"


def _write(path: Path, lines: list[dict | str]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def _human_lines() -> list[dict]:
    return [{"instance_id": _instance(item, lang), "model": "m", "verdict": said}
            for (item, lang), (_, _, said) in RESPONSES.items() if said]


@pytest.fixture
def xrag_home(home: Path) -> Path:
    home.mkdir(parents=True)
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', 'de'], 'g', '{}', now())")
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en'], 'import:mkqa.jsonl', '{}', now())")
        for (item, lang), (status, verdicts, _) in RESPONSES.items():
            instance = _instance(item, lang)
            cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question, answer,"
                        " source_lang, documents, seed, fingerprint) VALUES ('x', ?, ?, 'xrag', ?, ?, 'Q?', 'A', 'en',"
                        " '[]', 0, 'fp')", [instance, item, SETTING, lang])
            cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer, citations,"
                        " template, fingerprint, language_status, detected_lang)"
                        " VALUES ('x', ?, 'm', ?, ?, ?, ?, [], 't', 'fp', 'ok', ?)",
                        [instance, SETTING, lang, status, "an answer" if status == "ok" else None, lang])
            for judge, said in verdicts.items():
                verdict = said if said in ("yes", "no") else None
                cur.execute("INSERT INTO judgements (benchmark, instance_id, model, judge, kind, verdict, status,"
                            " fingerprint) VALUES ('x', ?, 'm', ?, 'correct', ?, ?, 'fp')",
                            [instance, judge, verdict, "ok" if verdict else said])
    return home


# -- the coefficients, by hand -----------------------------------------------------------------------------------


def test_cohen_kappa_of_a_table_by_hand_and_as_scikit_learn_computes_it() -> None:
    # 10 responses, (first judge, second judge): yes·yes 4, yes·no 1, no·yes 2, no·no 3
    # p_o = (4 + 3) / 10 = 0.7; the first says yes 5 times, the second 6:
    # p_e = 0.5 · 0.6 + 0.5 · 0.4 = 0.5; κ = (0.7 − 0.5) / (1 − 0.5) = 0.4
    assert cohen_kappa(np.array([4, 1, 2, 3]))[()] == pytest.approx(0.4)
    # scikit-learn's implementation, independent of this one, on random verdicts
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    table = [np.sum(a & b), np.sum(a & (1 - b)), np.sum((1 - a) & b), np.sum((1 - a) & (1 - b))]
    assert cohen_kappa(np.array(table))[()] == pytest.approx(cohen_kappa_score(a, b))


def test_cohen_kappa_is_one_for_perfect_agreement_and_undefined_when_every_verdict_is_the_same() -> None:
    # yes·yes 3, no·no 2: p_o = 1, p_e = 0.6² + 0.4² = 0.52, κ = (1 − 0.52) / (1 − 0.52) = 1
    assert cohen_kappa(np.array([3, 0, 0, 2]))[()] == pytest.approx(1.0)
    # all yes·yes: p_o = p_e = 1, κ = 0 / 0
    assert np.isnan(cohen_kappa(np.array([5, 0, 0, 0]))[()])
    # one judge always yes, the other not: p_e = 1 · 0.6 + 0 · 0.4 = 0.6, p_o = 0.6, κ = 0 (defined)
    assert cohen_kappa(np.array([3, 2, 0, 0]))[()] == pytest.approx(0.0)


def test_fleiss_kappa_by_hand() -> None:
    # 3 judges on 4 responses saying yes 3, 2, 0 and 1 times: P_i = (yes² + no² − 3) / 6 = 1, 1/3, 1, 1/3,
    # P̄ = (8/3) / 4 = 2/3; p(yes) = 6 / 12 = 1/2, P_e = 1/4 + 1/4 = 1/2; κ = (2/3 − 1/2) / (1/2) = 1/3
    counts = np.array([3, 2, 0, 1])
    sums = np.array([len(counts), counts.sum(), (counts**2).sum()])
    assert fleiss_kappa(sums, 3)[()] == pytest.approx(1 / 3)
    # every judge yes on every response: P_e = 1, undefined
    assert np.isnan(fleiss_kappa(np.array([4, 12, 36]), 3)[()])


def test_perfect_agreement_all_one_class_and_no_common_response_in_rows() -> None:
    responses = [Response("i1", "en", {"a": "yes", "b": "yes", "c": "yes"}),
                 Response("i2", "en", {"a": "no", "b": "no"}),
                 Response("i3", "en", {"a": "yes", "b": "yes"}),
                 Response("i4", "en", {"c": "no", "d": "yes"})]
    rows = {(r["lang"], tuple(r["judges"])): r for r in agreement_rows("correct", responses, resamples=50)}
    perfect = rows[("all", ("a", "b"))]
    assert (perfect["kappa"], perfect["agreement"], perfect["n"]) == (1.0, 1.0, 3)
    same = rows[("all", ("a", "c"))]  # one response in common, both yes: κ has no value, and the row says why
    assert (same["kappa"], same["ci_low"], same["agreement"], same["note"]) == (None, None, 1.0, SAME_CLASS)
    assert ("all", ("a", "d")) not in rows and ("all", ("b", "d")) not in rows  # nothing rated in common: no row
    assert ("all", ("a", "b", "c", "d")) not in rows  # no response every judge was asked about


def test_the_interval_brackets_kappa_is_reproducible_by_seed_and_resamples_instances() -> None:
    rng = np.random.default_rng(3)
    said = rng.random((60, 2)) < 0.5
    agree = rng.random(60) < 0.7  # the second judge copies the first 70% of the time
    responses = [Response(f"i{k}", "en", {"a": "yes" if x else "no", "b": "yes" if (x if same else y) else "no"})
                 for k, ((x, y), same) in enumerate(zip(said, agree))]
    row = agreement_rows("correct", responses, seed=1, resamples=500)[0]
    assert row["ci_low"] < row["kappa"] < row["ci_high"]
    assert agreement_rows("correct", responses, seed=1, resamples=500)[0] == row
    assert agreement_rows("correct", responses, seed=2, resamples=500)[0]["ci_low"] != row["ci_low"]
    # the same verdicts as answers of several models to one instance: one cluster, nothing to resample
    one = [Response("i0", r.lang, r.verdicts) for r in responses]
    clustered = agreement_rows("correct", one, seed=1, resamples=500)[0]
    assert clustered["kappa"] == pytest.approx(row["kappa"]) and clustered["ci_low"] is None


# -- people's verdicts and the command ---------------------------------------------------------------------------


def _agreement(home: Path, *extra: str) -> list[dict]:
    result = CliRunner().invoke(app, ["--home", str(home), "judges", "agreement", "--benchmark", "x", "--json",
                                      "--resamples", "200", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_commands_import_a_persons_verdicts_and_print_every_pair_and_the_panel(xrag_home: Path,
                                                                                   tmp_path: Path) -> None:
    path = _write(tmp_path / "ann.jsonl", _human_lines())
    imported = CliRunner().invoke(app, ["--home", str(xrag_home), "import", "verdicts", "--benchmark", "x",
                                        "--judge", "ann", "--file", str(path)])
    assert imported.exit_code == 0, imported.output
    assert "import-verdicts[x/human:ann]: computed, human:ann: 7 correct verdicts (2 yes)" in imported.output
    rows = {(r["lang"], tuple(r["judges"])): r for r in _agreement(xrag_home)}

    # j1 ~ j2 over the 7 judged responses: yes·yes 3 (q1 en, q1 de, q3 de), yes·no 1 (q2 en), no·yes 1 (q4 en),
    # no·no 2; p_o = 5/7, each says yes 4 times: p_e = (4/7)² + (3/7)² = 25/49; κ = (35 − 25) / (49 − 25) = 5/12
    pair = rows[("all", ("j1", "j2"))]
    assert (pair["measure"], pair["n"], pair["missing"]) == ("cohen", 7, 0)
    assert pair["kappa"] == pytest.approx(5 / 12) and pair["agreement"] == pytest.approx(5 / 7)
    assert pair["ci_low"] <= pair["kappa"] <= pair["ci_high"]
    # j1 ~ the person: yes·yes 2 (q1 en, q3 de), yes·no 2 (q2 en, q1 de), no·no 3; p_o = 5/7; j1 says yes 4
    # times, ann 2: p_e = (4/7)(2/7) + (3/7)(5/7) = 23/49; κ = (35 − 23) / (49 − 23) = 6/13
    human = rows[("all", ("human:ann", "j1"))]
    assert human["kappa"] == pytest.approx(6 / 13) and human["n"] == 7
    # German only: q1 de yes·no, q2 de no·no, q3 de yes·yes; p_o = 2/3, p_e = (2/3)(1/3) + (1/3)(2/3) = 4/9;
    # κ = (6 − 4) / (9 − 4) = 2/5
    assert rows[("de", ("human:ann", "j1"))]["kappa"] == pytest.approx(2 / 5)
    # j3's failed call on q4 en: out of its pairs, counted as missing
    assert (rows[("all", ("j1", "j3"))]["n"], rows[("all", ("j1", "j3"))]["missing"]) == (6, 1)
    # the model panel on the 6 responses all three rated, yes counts 3, 2, 0, 3, 1, 2 (q4 en left out):
    # P_i = 1, 1/3, 1, 1, 1/3, 1/3 → P̄ = 4/6 = 2/3; p(yes) = 11/18, P_e = (121 + 49) / 324 = 85/162;
    # κ = (108 − 85) / (162 − 85) = 23/77
    panel = rows[("all", ("j1", "j2", "j3"))]
    assert (panel["measure"], panel["n"], panel["missing"]) == ("fleiss", 6, 1)
    assert panel["kappa"] == pytest.approx(23 / 77) and panel["agreement"] == pytest.approx(2 / 3)
    assert ("all", ("human:ann", "j1", "j2", "j3")) in rows  # and everyone, the person included
    assert {lang for lang, _ in rows} == {"all", "en", "de"}

    table = CliRunner().invoke(app, ["--home", str(xrag_home), "judges", "agreement", "--benchmark", "x",
                                     "--resamples", "200"])
    assert table.exit_code == 0 and "human:ann ~ j1" in table.output and "0.462" in table.output  # 6/13
    assert _agreement(xrag_home, "--seed", "4") == _agreement(xrag_home, "--seed", "4")


def test_a_persons_verdicts_never_change_the_panels_accuracy(xrag_home: Path, tmp_path: Path) -> None:
    def board(judges: list[str]) -> dict:
        with Warehouse(xrag_home) as wh:
            score_model(wh, "x", "xrag", "m", judges, ScoringConfig(resamples=50), "fp")
            return {(lang, metric): (value, n) for lang, metric, value, n in wh.query(
                "SELECT lang, metric, value, n FROM leaderboard WHERE model = 'm' AND subset = 'all'")}

    before = board(PANEL)
    with Warehouse(xrag_home) as wh:
        import_verdicts(wh, "x", "ann", _write(tmp_path / "ann.jsonl", _human_lines()))
    assert board(PANEL) == before
    # English by the panel: q1 (3 of 3) and q2 (2 of 3) correct, q3 (0) and q4 (1 yes, 1 missing) not: 2 of 4.
    # Were ann counted, a panel of 4 needs 3 yes: q2 (2 of 4) falls and only q1 stays: 1 of 4
    assert before[("en", "accuracy")] == (pytest.approx(50.0), 4)
    assert board([*PANEL, "human:ann"])[("en", "accuracy")] == (pytest.approx(25.0), 4)


def test_booleans_read_as_yes_and_no_and_an_import_replaces_the_persons_earlier_verdicts(xrag_home: Path,
                                                                                        tmp_path: Path) -> None:
    def stored() -> set[tuple]:
        with Warehouse(xrag_home) as wh:
            return set(wh.query("SELECT instance_id, verdict, status, kind FROM judgements WHERE judge = 'human:ann'"))

    first, second = _instance("q1", "en"), _instance("q2", "en")
    with Warehouse(xrag_home) as wh:
        import_verdicts(wh, "x", "ann", _write(tmp_path / "a.jsonl", [
            {"instance_id": first, "model": "m", "verdict": True},
            {"instance_id": second, "model": "m", "verdict": False}]))
    assert stored() == {(first, "yes", "ok", "correct"), (second, "no", "ok", "correct")}
    with Warehouse(xrag_home) as wh:
        import_verdicts(wh, "x", "human:ann", _write(tmp_path / "b.jsonl", [  # the prefix given: the same judge
            {"instance_id": second, "model": "m", "verdict": "yes"}]))
    assert stored() == {(second, "yes", "ok", "correct")}
    with Warehouse(xrag_home) as wh, pytest.raises(ConfigError, match="c.jsonl line 2"):
        import_verdicts(wh, "x", "ann", _write(tmp_path / "c.jsonl", [
            {"instance_id": first, "model": "m", "verdict": "no"}, "{"]))
    assert stored() == {(second, "yes", "ok", "correct")}  # a bad file leaves the last import as it was


@pytest.mark.parametrize(("lines", "error"), [
    ([{"instance_id": "nope", "model": "m", "verdict": "yes"}], r"v.jsonl line 1: benchmark 'x' has no instance"
                                                                 r" 'nope'"),
    ([{"instance_id": "FIRST", "model": "other", "verdict": "yes"}], r"v.jsonl line 1: model 'other' has no"
                                                                       r" response to instance"),
    ([{"instance_id": "FAILED", "model": "m", "verdict": "no"}], r"v.jsonl line 1: .* failed \(call_failed\):"
                                                                   r" there is no answer to judge"),
    (["", {"instance_id": "FIRST", "model": "m", "verdict": "maybe"}], r'v.jsonl line 2: verdict is \'maybe\','
                                                                          r' not "yes", "no", true or false'),
    ([{"instance_id": "FIRST", "model": "m", "verdict": None}], r"v.jsonl line 1: not a valid verdict"),
    ([{"instance_id": "FIRST", "model": "m", "verdict": "yes"}, {"instance_id": "FIRST", "model": "m",
                                                                  "verdict": "no"}],
     r"v.jsonl line 2: response \(instance, model\) .* again \(first on line 1\)"),
    ([{"instance_id": "FIRST", "model": "m", "verdict": "yes"}, "not json"], r"v.jsonl line 2: not JSON"),
    ([], r"v.jsonl: no verdicts"),
])
def test_a_bad_line_is_named_with_its_file_and_nothing_is_written(xrag_home: Path, tmp_path: Path,
                                                                   lines: list, error: str) -> None:
    named = {"FIRST": _instance("q1", "en"), "FAILED": _instance("q4", "de")}
    path = _write(tmp_path / "v.jsonl", [json.loads(json.dumps(line).replace("FIRST", named["FIRST"])
                                                    .replace("FAILED", named["FAILED"])) if isinstance(line, dict)
                                         else line for line in lines])
    with Warehouse(xrag_home) as wh:
        with pytest.raises(ConfigError, match=error):
            import_verdicts(wh, "x", "ann", path)
        assert wh.scalar("SELECT count(*) FROM judgements WHERE judge LIKE 'human:%'") == 0


def test_a_benchmark_without_a_judge_an_unknown_one_or_a_blank_name_is_refused(xrag_home: Path,
                                                                                tmp_path: Path) -> None:
    path = _write(tmp_path / "v.jsonl", _human_lines())
    with Warehouse(xrag_home) as wh:
        with pytest.raises(ConfigError, match=r"'mk' \(mkqa\) is scored without a judge"):
            import_verdicts(wh, "mk", "ann", path)
        with pytest.raises(ConfigError, match="no benchmark 'nope'"):
            import_verdicts(wh, "nope", "ann", path)
        with pytest.raises(ConfigError, match="give the person"):
            import_verdicts(wh, "x", "human: ", path)
    result = CliRunner().invoke(app, ["--home", str(xrag_home), "judges", "agreement", "--benchmark", "nope"])
    assert result.exit_code == 2 and "no benchmark 'nope'" in result.output
