"""The monthly live release as the flows and prefect.yaml run it: a live build resolves to a literal window and the
month's name before anything is recorded, and the scheduled chain builds and assembles the month with no hand edit."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from flows.qa import InstancesParams, QaBuildParams, _this_month
from tasks.qa.window import Window
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump

REPO = Path(__file__).resolve().parents[2]


def _deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]}


def test_a_live_build_runs_as_the_literal_window_and_name_of_the_latest_dump(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    for day, pages in (("20261031", [(1, "One", None)]), ("20261130", [(1, "One", None), (2, "Two", None)])):
        for lang in ("en", "de"):
            ingest_dump(wh, lang, day, pages)
    params = QaBuildParams(recipe="xrag", langs=["en", "de"], live=True, home=str(tmp_path))
    assert params.benchmark is None  # named once the window is known, not after the recipe

    built = _this_month(wh, params)
    # the day after the previous dump (2026-10-31) to the latest (2026-11-30)
    assert built.recipe_config().window == Window(since=date(2026, 11, 1), until=date(2026, 11, 30))
    assert (built.name, built.live) == ("xrag-live-2026-11", False)  # a rerun of its stages rebuilds the same month
    assert _this_month(wh, built) == built  # a literal window is left as it is


def test_live_and_an_explicit_window_are_one_or_the_other() -> None:
    with pytest.raises(ValidationError, match="live takes its window from the ingested dumps"):
        QaBuildParams(recipe="eclektic", langs=["en", "de"], live=True, config={"window": "20261101"})


def test_the_scheduled_chain_builds_the_month_after_the_corpus_and_assembles_it_after_the_build() -> None:
    deployments = _deployments()
    build, instances = deployments["qa-build-monthly"], deployments["instances-monthly"]
    assert build["entrypoint"] == "flows/qa.py:qa_build_flow"
    [trigger] = build["triggers"]
    assert trigger["match_related"]["prefect.resource.name"] == "corpus-monthly"
    assert trigger["expect"] == ["prefect.flow-run.Completed"]
    assert trigger["parameters"] == build["parameters"]  # the trigger runs the deployment's own form
    params = QaBuildParams.model_validate(trigger["parameters"]["params"])
    assert params.live and params.benchmark is None and params.recipe_config().window is None  # no month written by hand

    assert instances["entrypoint"] == "flows/qa.py:instances_flow"
    [trigger] = instances["triggers"]
    assert trigger["match_related"]["prefect.resource.name"] == "qa-build-monthly"
    assert trigger["parameters"] == instances["parameters"]
    month = InstancesParams.model_validate(trigger["parameters"]["params"])
    assert (month.benchmark, month.live) == ("xrag-live", True)  # the family built by qa-build-monthly


def test_the_on_demand_build_form_still_takes_an_explicit_window() -> None:
    form = _deployments()["qa-build"]["parameters"]["params"]
    params = QaBuildParams.model_validate(form | {"config": {"window": "20261101:20261130"}, "recipe": "xrag"})
    assert params.recipe_config().window == Window(since=date(2026, 11, 1), until=date(2026, 11, 30))
    assert not params.live and params.name == "xrag"


def test_a_build_recorded_before_recipes_were_plugins_keeps_its_settings() -> None:
    """Runs recorded their recipe's settings under its name, beside the other recipe's defaults: a rerun of such a
    run must build with them, not with the defaults."""
    recorded = {"recipe": "xrag", "langs": ["en", "de"], "xrag": {"max_pairs": 3, "window": "20261101:20261130"},
                "eclektic": {"per_lang": 100}}
    params = QaBuildParams.model_validate(recorded)
    assert params.config == {"max_pairs": 3, "window": "20261101:20261130"}
    assert (params.recipe_config().max_pairs, params.recipe_config().window.since) == (3, date(2026, 11, 1))
