"""Rerunning one stage on one scope: that stage and its descendants recompute, everything upstream is cached."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from flows.arena import ArenaParams
from flows.clir import ClirBuildParams
from flows.corpus import CorpusParams
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.features import FeaturesParams
from flows.imports import ImportParams
from flows.qa import InstancesParams, QaBuildParams
from flows.rerun import RerunParams, rerun_stage_flow
from tasks.errors import ConfigError
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")
GOLD = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])


@pytest.fixture
def evaluated(home: Path, server: FakeLLMServer) -> Path:
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "m", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat"}]}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en', 'de'], 'import:x', '{}', now())")
        for lang, question in (("en", "Which river?"), ("de", "Welcher Fluss?")):
            cur.execute("INSERT INTO instances VALUES ('mk', ?, '1', 'mkqa', 'closed_book', ?, ?, 'Velna', 'en', NULL,"
                        " NULL, '[]', 0, 'fp', ?, NULL, NULL)", [f"1|closed_book|{lang}", lang, question, GOLD])
    server.answer("?", "Velna")
    rows = evaluate_flow(EvaluateParams(benchmark="mk", models=["m"], judges=[], home=str(home)))
    assert {r["status"] for r in rows} == {"computed"}
    return home


def _statuses(rows: list[dict]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["stage"], set()).add(row["status"])
    return found


def test_rerunning_scoring_recomputes_only_scoring(evaluated: Path, server: FakeLLMServer) -> None:
    rows = rerun_stage_flow(RerunParams(stage="scoring", scope="mk", home=str(evaluated)))
    assert _statuses(rows) == {"inference": {"cached"}, "scoring": {"computed"}}


def test_rerunning_inference_in_one_language_recomputes_it_and_what_follows_without_paying_again(
        evaluated: Path, server: FakeLLMServer) -> None:
    calls = len(server.calls)
    rows = rerun_stage_flow(RerunParams(stage="inference", scope="mk", langs=["de"], home=str(evaluated)))
    assert [(r["stage"], r["cell"], r["status"]) for r in rows if r["stage"] == "inference"] == [
        ("inference", "mk/closed_book/de/m", "computed")]
    assert _statuses(rows)["scoring"] == {"computed"}
    assert len(server.calls) == calls  # the answers come from the call cache


def test_a_scope_never_run_is_a_clear_error(evaluated: Path) -> None:
    with pytest.raises(ConfigError, match="no earlier evaluate run on 'other'"):
        rerun_stage_flow(RerunParams(stage="judging", scope="other", home=str(evaluated)))



def test_a_collection_rerun_keeps_its_languages_and_a_narrowed_one_is_refused(sample_home: Path) -> None:
    from flows.clir import ClirBuildParams, clir_build_flow
    from tasks.pairing.config import ClirConfig

    home = str(sample_home)
    clir_build_flow(ClirBuildParams(name="c", langs=["en", "de", "ja"], clir=ClirConfig(top_k=20, min_documents=10),
                                    home=home))
    # before the fix this rebuilt "c" over en and de only: the languages define the collection
    with pytest.raises(ConfigError, match="retrieval cannot be rerun for some languages only: its languages define"):
        rerun_stage_flow(RerunParams(stage="retrieval", scope="c", langs=["en", "de"], home=home))
    rows = rerun_stage_flow(RerunParams(stage="qrels", scope="c", home=home))
    assert {(r["stage"], r["status"]) for r in rows} == {("index", "cached"), ("retrieval", "cached"),
                                                         ("qrels", "computed")}
    assert len([r for r in rows if r["stage"] == "qrels"]) == 6  # every direction of en, de, ja
    with Warehouse(sample_home) as wh:
        assert sorted(wh.scalar("SELECT langs FROM clir_collections WHERE name = 'c'")) == ["de", "en", "ja"]


def test_a_narrowed_rerun_does_not_narrow_the_next_one(evaluated: Path, server: FakeLLMServer) -> None:
    rerun_stage_flow(RerunParams(stage="inference", scope="mk", langs=["de"], home=str(evaluated)))
    rows = rerun_stage_flow(RerunParams(stage="scoring", scope="mk", home=str(evaluated)))
    assert {(r["stage"], r["cell"], r["status"]) for r in rows} == {
        ("inference", "mk/closed_book/en/m", "cached"), ("inference", "mk/closed_book/de/m", "cached"),
        ("scoring", "mk/m", "computed")}


def test_languages_outside_the_scope_are_refused_with_the_way_to_add_them(home: Path) -> None:
    home.mkdir(parents=True)
    _recorded(home, "corpus", CorpusParams(langs=["en", "de"], home=str(home)))
    with pytest.raises(ConfigError, match=r"'corpus' has no ja among its languages \(en, de\); add a language with"
                                          " `babelbench backfill"):
        rerun_stage_flow(RerunParams(stage="documents", langs=["ja"], home=str(home)))


REFUSED = {  # stage → (its owner's run, the reason named when the rerun is narrowed)
    "index": ("clir-build", lambda home: ClirBuildParams(name="mk", langs=["en", "de"], home=home),
              "its languages define the collection"),
    "qa-generate": ("qa-build", lambda home: QaBuildParams(recipe="eclektic", benchmark="mk", langs=["en", "de"],
                                                           home=home), "its languages define the benchmark"),
    "instances": ("instances", lambda home: InstancesParams(benchmark="mk", home=home),
                  "one cell over all of its languages"),
    "features": ("features", lambda home: FeaturesParams(benchmark="mk", home=home),
                 "one cell over every response of the benchmark"),
    "import": ("import", lambda home: ImportParams(dataset="mkqa", source=str(home), name="mk", home=home),
               "an import is one cell"),
}


@pytest.mark.parametrize("stage", sorted(REFUSED))
def test_narrowing_a_stage_without_per_language_cells_is_refused_with_the_reason(home: Path, stage: str) -> None:
    flow_name, params, reason = REFUSED[stage]
    home.mkdir(parents=True)
    _recorded(home, flow_name, params(str(home)))
    with pytest.raises(ConfigError, match=f"{stage} cannot be rerun for some languages only: .*{reason}"):
        rerun_stage_flow(RerunParams(stage=stage, scope="mk", langs=["de"], home=str(home)))


def test_narrowing_models_of_the_arena_is_refused_its_models_are_the_tournament(home: Path) -> None:
    home.mkdir(parents=True)
    _recorded(home, "arena", ArenaParams(benchmark="mk", models=["a", "b"], judge="j", home=str(home)))
    with pytest.raises(ConfigError, match="cannot be rerun for some models only: its models define the tournament"):
        rerun_stage_flow(RerunParams(stage="arena-judging", scope="mk", models=["a"], home=str(home)))


def _recorded(home: Path, flow_name: str, params: BaseModel) -> None:
    """A finished run of ``flow_name`` with ``params`` in the warehouse (what a rerun reads its scope from)."""
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO runs (run_id, flow, started_at, finished_at, status, params, code_version)"
                    " VALUES (?, ?, now(), now(), 'completed', ?, 'test')", [uuid.uuid4().hex, flow_name,
                                                                           params.model_dump_json()])


def test_the_import_stage_has_an_owner_and_reruns_the_import(home: Path) -> None:
    from flows.demo_qa import MKQA_SAMPLE
    from flows.imports import import_flow

    import_flow(ImportParams(dataset="mkqa", source=str(MKQA_SAMPLE), name="mk", home=str(home)))
    rows = rerun_stage_flow(RerunParams(stage="import", scope="mk", home=str(home)))
    assert [(r["stage"], r["cell"], r["status"]) for r in rows] == [("import", "mk", "computed")]
    with Warehouse(home) as wh:
        assert wh.query("SELECT flow, status FROM runs ORDER BY started_at") == [("import", "completed")] * 2
