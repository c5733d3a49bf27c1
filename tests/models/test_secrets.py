"""A planted API key reaches the endpoint and nothing else: not the home, the Prefect database, MLflow or the logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, Fault

pytestmark = pytest.mark.usefixtures("prefect_api")
SENTINEL = "sk-sentinel-7f3a9c1e5b2d4f60a8e1c3"
GOLD = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])


def _prefect_database() -> list[Path]:
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

    url = PREFECT_API_DATABASE_CONNECTION_URL.value() or ""
    database = Path(url.split("///", 1)[1]) if "sqlite" in url else None
    assert database is not None and database.exists(), f"the test Prefect API's database is not a file: {url}"
    return [path for path in database.parent.glob(database.name + "*") if path.is_file()]


@pytest.mark.parametrize("how", ["api_key_env", "api_key_secret"])
def test_a_planted_key_is_sent_to_the_endpoint_and_stored_nowhere(
        how: str, home: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    if how == "api_key_env":
        monkeypatch.setenv("BABELBENCH_TEST_KEY", SENTINEL)
        entry = {"api_key_env": "BABELBENCH_TEST_KEY"}
    else:
        from prefect.blocks.system import Secret

        Secret(value=SENTINEL).save("babelbench-test-key", overwrite=True)
        entry = {"api_key_secret": "babelbench-test-key"}
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "paid", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat", **entry}]}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en'], 'import:x', '{}', now())")
        for n, question in enumerate(["Which river is long?", "Which river is wide?"]):
            cur.execute("INSERT INTO instances VALUES ('mk', ?, ?, 'mkqa', 'closed_book', 'en', ?, 'Velna', 'en', NULL,"
                        " NULL, '[]', 0, 'fp', ?, NULL, NULL)", [f"{n}|closed_book|en", str(n), question, GOLD])
    server.answer("wide", "Velna")
    server.script("long", Fault.echo_authorization())  # an endpoint that quotes the credentials in its error
    caplog.set_level(logging.DEBUG)
    evaluate_flow(EvaluateParams(benchmark="mk", models=["paid"], judges=[], home=str(home)))

    assert {call.headers.get("authorization") for call in server.calls} == {f"Bearer {SENTINEL}"}  # it was used
    with Warehouse(home) as wh:
        echoed = wh.scalar("SELECT reason FROM responses WHERE instance_id = '0|closed_book|en'")
    assert "Incorrect credentials provided" in echoed and "[redacted]" in echoed  # the echo was kept, masked
    secret = SENTINEL.encode()
    leaks = [str(path) for path in [*home.rglob("*"), *_prefect_database()]
             if path.is_file() and secret in path.read_bytes()]
    assert leaks == []  # warehouse, lake, MLflow store and artifacts, Prefect database
    printed = capfd.readouterr()
    assert SENTINEL not in printed.out + printed.err and SENTINEL not in caplog.text


def test_a_missing_secret_block_is_a_clear_error() -> None:
    from tasks.errors import ConfigError
    from tasks.llm import ModelSpec
    from tasks.llm.backends import api_key

    spec = ModelSpec(name="paid", backend="openai", model="m", api_key_secret="no-such-block")
    with pytest.raises(ConfigError, match="model 'paid': no Prefect Secret block 'no-such-block'"):
        api_key(spec)
