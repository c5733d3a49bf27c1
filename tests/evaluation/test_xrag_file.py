"""``score_xrag_file``: XRAG accuracy from a file of verdicts made elsewhere, against numbers worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.metrics.xrag_file import score_xrag_file


def _line(model: str, question: str, lang: str, judge: str, verdict: str | None, language_ok: bool | None,
          setting: str = "mono") -> dict:
    return {"question_id": question, "lang": lang, "setting": setting, "model": model, "judge": judge,
            "verdict": verdict, "language_ok": language_ok}


# The panel is every judge in the file: j1, j2, j3.
LINES = [
    # m, q1 in English: 2 of 3 yes, in English: correct (the baseline)
    _line("m", "q1", "en", "j1", "yes", True), _line("m", "q1", "en", "j2", "yes", True),
    _line("m", "q1", "en", "j3", "no", True),
    # m, q1 in German: j1 yes, j2 null, j3 has no line: 1 yes of 3 is no majority (an incomplete panel)
    _line("m", "q1", "de", "j1", "yes", True), _line("m", "q1", "de", "j2", None, True),
    # m, q2 in German: the panel says yes, but the answer is not in German: incorrect
    *(_line("m", "q2", "de", judge, "yes", False) for judge in ("j1", "j2", "j3")),
    # m, q2 in Chinese: 2 of 3 yes, language not checked: correct
    _line("m", "q2", "zh", "j1", "yes", None), _line("m", "q2", "zh", "j2", "yes", None),
    _line("m", "q2", "zh", "j3", "no", None),
    # m, q3 in Chinese: correct
    *(_line("m", "q3", "zh", judge, "yes", True) for judge in ("j1", "j2", "j3")),
    # n, q1 in German: every judge says no
    *(_line("n", "q1", "de", judge, "no", True) for judge in ("j1", "j2", "j3")),
]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_accuracy_per_model_setting_and_language_with_the_non_english_pool(tmp_path: Path) -> None:
    result = score_xrag_file(_write(tmp_path / "j.jsonl", LINES), seed=0, resamples=200)
    assert result["incomplete_panels"] == 1  # m's q1 in German
    m = result["models"]["m"]["mono"]
    assert (m["en"]["accuracy"], m["en"]["n"]) == (pytest.approx(100.0), 1)  # q1
    assert (m["en"]["ci_low"], m["en"]["ci_high"]) == (None, None)  # one question: no interval
    assert (m["de"]["accuracy"], m["de"]["n"]) == (pytest.approx(0.0), 2)  # q1 (no majority) and q2 (language)
    assert (m["zh"]["accuracy"], m["zh"]["n"]) == (pytest.approx(100.0), 2)  # q2 and q3
    # all: German and Chinese, English left out: q2 zh and q3 zh correct of 4
    assert (m["all"]["accuracy"], m["all"]["n"]) == (pytest.approx(50.0), 4)
    assert m["all"]["ci_low"] <= 50.0 <= m["all"]["ci_high"]
    assert set(m["all"]) == {"accuracy", "n", "ci_low", "ci_high"}
    n = result["models"]["n"]["mono"]
    assert (n["de"]["accuracy"], n["de"]["n"], n["all"]["accuracy"]) == (pytest.approx(0.0), 1, pytest.approx(0.0))
    json.dumps(result)  # what `babelbench score xrag --json` prints


def test_a_setting_asked_only_in_english_has_no_pooled_language(tmp_path: Path) -> None:
    result = score_xrag_file(_write(tmp_path / "j.jsonl", LINES[:3]), resamples=50)
    assert set(result["models"]["m"]["mono"]) == {"en"}


@pytest.mark.parametrize("bad, message", [
    ({**LINES[0], "verdict": "maybe"}, "line 2: verdict is 'maybe'"),
    ({key: value for key, value in LINES[0].items() if key != "judge"}, "line 2: missing judge"),
    ({**LINES[0], "language_ok": "yes"}, "line 2: language_ok is 'yes'"),
    ({**LINES[0], "language_ok": 1}, "line 2: language_ok is 1"),
    (LINES[0], "line 2: a second verdict of judge 'j1' on question 'q1'"),
    ({**LINES[0], "judge": "j2", "language_ok": False}, "line 2: language_ok is false, but true on an earlier line"),
])
def test_a_bad_line_is_an_error_naming_the_file_and_line(tmp_path: Path, bad: dict, message: str) -> None:
    path = _write(tmp_path / "j.jsonl", [LINES[0], bad])
    with pytest.raises(ConfigError, match=rf"j\.jsonl {message}"):
        score_xrag_file(path)


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(LINES[0]) + "\n{not json\n")
    with pytest.raises(ConfigError, match=r"j\.jsonl line 2"):
        score_xrag_file(path)
