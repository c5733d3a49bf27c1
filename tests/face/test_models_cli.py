"""``babelbench models list|add`` and the registry's edit announcements, without a Prefect server.

What reaches a real server (the event, the evaluation the trigger starts) is
tests/face/test_deployments.py's; here the event sender is replaced by a recorder.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from prefect.events.clients import AssertingEventsClient
from typer.testing import CliRunner

from flows.cli import app
from tasks.llm.registry import MODELS_ENV, SEEN_FILE, load_registry

ADD = ["models", "add", "--name", "served", "--backend", "openai", "--model", "m-1", "--base-url", "http://127.0.0.1:9/v1"]


Sent = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """The events the registry sends, as JSON, taken by Prefect's recording events client; a Prefect API counts as
    configured."""
    AssertingEventsClient.reset()
    monkeypatch.delenv(MODELS_ENV, raising=False)
    monkeypatch.setattr("tasks.prefect_api.configured_api_url", lambda: "http://127.0.0.1:1/api")
    monkeypatch.setattr("prefect.events.clients.get_events_client", lambda **_: AssertingEventsClient())
    return lambda: [event.model_dump(mode="json") for client in AssertingEventsClient.all for event in client.events]


def _run(home: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["--home", str(home), *args])


def test_add_creates_a_registry_that_keeps_the_built_in_models_and_announces_the_new_one(
        home: Path, sent: Sent) -> None:
    result = _run(home, *ADD)
    assert result.exit_code == 0, result.output
    assert "announced babelbench.model.added for 'served'" in result.output
    assert load_registry(home=home).names == ["local", "abstain", "extractive", "oracle", "reference-judge", "served"]
    assert [(e["event"], e["resource"]["prefect.resource.id"], e["resource"]["prefect.resource.name"]) for e in sent()] \
        == [("babelbench.model.added", "babelbench.model.served", "served")]
    assert sent()[0]["payload"]["backend"] == "openai" and "base_url" not in sent()[0]["payload"]
    listed = _run(home, "models", "list")
    assert listed.exit_code == 0 and "served" in listed.output and str(home / "models.yaml") in listed.output
    assert len(sent()) == 1  # loading an unchanged registry announces nothing


def test_add_keeps_the_file_s_comments_and_refuses_a_bad_or_taken_entry(home: Path, sent: Sent) -> None:
    home.mkdir(parents=True)
    registry = home / "models.yaml"
    registry.write_text("# my models\nmodels:\n  - name: a  # the first\n    backend: baseline\n    model: abstain\n")
    assert _run(home, *ADD).exit_code == 0
    text = registry.read_text()
    assert text.startswith("# my models\nmodels:\n  - name: a  # the first\n") and "  - name: served\n" in text
    assert load_registry(home=home).names == ["a", "served"]

    taken = _run(home, *ADD)
    assert taken.exit_code == 2 and "a model named 'served' exists already" in taken.output
    bad = _run(home, "models", "add", "--name", "gguf", "--backend", "llamacpp", "--model", "x.gguf",
               "--base-url", "http://h/v1")
    assert bad.exit_code == 2 and "model 'gguf'" in bad.output and "runs in-process: drop base_url" in bad.output
    wrong = _run(home, "models", "add", "--name", "w", "--backend", "openai", "--model", "m", "--max-concurrency", "0")
    assert wrong.exit_code == 2 and "max_concurrency: Input should be greater than or equal to 1" in wrong.output
    assert registry.read_text() == text  # nothing written
    assert [e["resource"]["prefect.resource.name"] for e in sent()] == ["served"]


def test_an_edit_of_the_file_is_announced_by_the_next_load(home: Path, sent: Sent) -> None:
    home.mkdir(parents=True)
    registry = home / "models.yaml"
    registry.write_text(yaml.safe_dump({"models": [{"name": "a", "backend": "baseline", "model": "abstain"},
                                                   {"name": "b", "backend": "baseline", "model": "abstain"}]}))
    load_registry(home=home)
    assert sent() == [] and (home / SEEN_FILE).is_file()  # the first sighting is recorded, not announced
    registry.write_text(yaml.safe_dump({"models": [{"name": "a", "backend": "baseline", "model": "extractive"},
                                                   {"name": "c", "backend": "baseline", "model": "abstain"}]}))
    load_registry(home=home)
    load_registry(home=home)
    assert sorted((e["event"], e["resource"]["prefect.resource.name"]) for e in sent()) == [
        ("babelbench.model.added", "c"), ("babelbench.model.removed", "b"), ("babelbench.model.updated", "a")]


def test_without_a_prefect_api_the_edit_waits_for_the_next_load_that_has_one(
        home: Path, sent: Sent, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as offline:
        offline.setattr("tasks.prefect_api.configured_api_url", lambda: None)
        result = _run(home, *ADD)
        assert result.exit_code == 0, result.output
        assert result.output == f"added 'served' to {home / 'models.yaml'}\n"  # nothing to do: nothing said
        load_registry(home=home)
    assert sent() == []
    load_registry(home=home)  # now with an API
    assert [(e["event"], e["resource"]["prefect.resource.name"]) for e in sent()] == [("babelbench.model.added", "served")]


def test_an_api_that_refuses_the_event_leaves_it_to_the_next_load(
        home: Path, sent: Sent, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens at the configured address: the add still succeeds, says the event was not announced and
    what to check, and the next load that reaches an API announces it once."""
    from prefect.events.clients import PrefectEventsClient

    with monkeypatch.context() as refusing:
        refusing.setattr("prefect.events.clients.get_events_client",
                         lambda **kw: PrefectEventsClient(api_url="http://127.0.0.1:9/api", **kw))
        result = _run(home, *ADD)
        assert result.exit_code == 0, result.output
        assert ("not announced: the Prefect API at http://127.0.0.1:1/api did not take babelbench.model.added for"
                " 'served'; check that it runs") in result.output
    assert sent() == []
    load_registry(home=home)
    assert [(e["event"], e["resource"]["prefect.resource.name"]) for e in sent()] == [("babelbench.model.added", "served")]


def test_a_knowledge_cutoff_is_added_edited_and_removed(home: Path, sent: Sent) -> None:
    assert _run(home, *ADD, "--knowledge-cutoff", "2024-02").exit_code == 0
    assert load_registry(home=home).get("served").cutoff_day == date(2024, 2, 29)  # a month covers all of it (leap year)
    edited = _run(home, "models", "edit", "served", "--knowledge-cutoff", "2024-06-15")
    assert edited.exit_code == 0, edited.output
    assert load_registry(home=home).get("served").cutoff_day == date(2024, 6, 15)
    assert ("babelbench.model.updated", "served") in [(e["event"], e["resource"]["prefect.resource.name"]) for e in sent()]
    assert _run(home, "models", "edit", "served", "--knowledge-cutoff", "unknown").exit_code == 0
    assert load_registry(home=home).get("served").knowledge_cutoff is None
    local = _run(home, "models", "edit", "local", "--knowledge-cutoff", "2025-01")  # a built-in entry, file kept
    assert local.exit_code == 0 and load_registry(home=home).get("local").knowledge_cutoff == "2025-01"


def test_a_bad_cutoff_or_an_unknown_model_is_refused_by_name(home: Path, sent: Sent) -> None:
    bad = _run(home, *ADD, "--knowledge-cutoff", "2024-13")
    assert bad.exit_code != 0 and "knowledge cutoff '2024-13': expected YYYY-MM or YYYY-MM-DD" in bad.output
    missing = _run(home, "models", "edit", "nobody", "--knowledge-cutoff", "2024-01")
    assert missing.exit_code != 0 and "no model named 'nobody'" in missing.output
    assert _run(home, "models", "edit", "local").exit_code != 0  # nothing to change
