"""``babelbench score xrag``: judge verdicts made elsewhere, scored by the protocol's panel and language rules."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app

JUDGES = ("j1", "j2", "j3")
# (lang, question, verdicts of j1, j2, j3 — absent: no line —, language_ok)
VERDICTS = [
    ("de", "q1", ("yes", "yes", "no"), True),  # 2 of 3: correct
    ("de", "q2", ("yes", None, "no"), True),  # 1 yes of the panel of 3 (null is no yes): wrong, incomplete
    ("de", "q3", ("yes", "yes", "yes"), False),  # wrong language: wrong
    ("de", "q4", ("yes", "yes", "absent"), True),  # 2 of the 3 still a majority: correct, incomplete
    ("es", "q1", ("yes", "yes", "yes"), True),  # correct
    ("en", "q1", ("no", "no", "no"), True),  # wrong
]


def _judgements(path: Path) -> Path:
    lines = [{"question_id": question, "lang": lang, "setting": "monolingual", "model": "m", "judge": judge,
              "verdict": verdict, "language_ok": language_ok}
             for lang, question, verdicts, language_ok in VERDICTS
             for judge, verdict in zip(JUDGES, verdicts, strict=True) if verdict != "absent"]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_score_xrag_prints_the_panel_accuracy_per_language_as_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["score", "xrag", "--judgements", str(_judgements(tmp_path / "j.jsonl")),
                                      "--json"])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output)
    langs = scored["models"]["m"]["monolingual"]
    assert (langs["de"]["accuracy"], langs["de"]["n"]) == (50.0, 4)  # q1 and q4 of 4
    assert (langs["es"]["accuracy"], langs["es"]["n"]) == (100.0, 1)
    assert (langs["en"]["accuracy"], langs["en"]["n"]) == (0.0, 1)
    assert (langs["all"]["accuracy"], langs["all"]["n"]) == (60.0, 5)  # de and es pooled, English apart: 3 of 5
    assert (langs["es"]["ci_low"], langs["es"]["ci_high"]) == (None, None)  # one question: no interval
    assert scored["incomplete_panels"] == 2  # de q2 (null) and de q4 (no line of j3)


def test_score_xrag_prints_a_readable_summary_and_names_a_bad_line(tmp_path: Path) -> None:
    path = _judgements(tmp_path / "j.jsonl")
    result = CliRunner().invoke(app, ["score", "xrag", "--judgements", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "XRAG accuracy (%), 2 incomplete panels"
    assert any(line.split()[:5] == ["m", "monolingual", "es", "100.0", "95%"] and "[n/a, n/a]" in line
               for line in lines)

    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"question_id": "q9", "lang": "de", "setting": "monolingual", "model": "m",
                                 "judge": "j1", "verdict": "maybe", "language_ok": True}) + "\n")
    bad = CliRunner().invoke(app, ["score", "xrag", "--judgements", str(path)])
    assert bad.exit_code == 2
    assert "j.jsonl line 18: verdict is 'maybe'" in bad.output  # 17 lines above (6 x 3 less the absent one)
