"""API keys stay out of the warehouse and the logs, even when an endpoint echoes them in its errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tasks.llm import PermanentLLMError, TransientLLMError
from tasks.llm.redact import redact, remember_secret
from tasks.qa.eclektic import EclekticConfig, generate_items, select_candidates
from tasks.qa.qc import QcConfig, prescreen
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client
from tests.support.warehouse_docs import add_document

KEY = "tk-live-5b1e9c07d2a84f36"  # no common secret shape: only remembering the value can mask it
KEY_ENV = "BABELBENCH_TEST_ECHOED_KEY"


def test_remembered_keys_and_common_secret_shapes_are_masked() -> None:
    remember_secret(KEY)
    assert redact(f"key {KEY} was refused") == "key [redacted] was refused"
    assert redact("Authorization: Bearer abcdefgh12345678") == "Authorization: Bearer [redacted]"
    assert redact("use sk-proj-AbCdEfGh1234567890xyz instead") == "use [redacted] instead"
    assert redact("{'api_key': 'abcd1234efgh', 'x-api-key': 'ijkl5678mnop'}") == (
        "{'api_key': '[redacted]', 'x-api-key': '[redacted]'}")
    plain = "HTTP 429: the bearer of this task-level quota asks you to slow down"
    assert redact(plain) == plain
    # every model-call error is masked as it is made, whichever backend raises it
    assert str(PermanentLLMError(f"HTTP 401: bad key {KEY}")) == "HTTP 401: bad key [redacted]"
    assert str(TransientLLMError(f"HTTP 429: {KEY}", retry_after=1.0)) == "HTTP 429: [redacted]"


# Articles whose names occur in no prompt template, so each scripts only its own prompts.
ARTICLES = {
    1: ("Kestel Mill", "The Kestel Mill is a tide mill on the Ulva estuary, built in 1790 and restored in 1985."),
    2: ("Mirrow Abbey", "Mirrow Abbey is a ruined Cistercian abbey on the Mirrow moors, founded in 1147."),
    3: ("Ulva Lighthouse", "The Ulva Lighthouse stands on the Ulva headland and was first lit in 1869."),
}


def test_an_endpoint_echoing_the_key_in_its_errors_gets_it_nowhere(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)  # the SDK's and HTTP client's own logs too
    server.script("Passage: The Kestel Mill", Fault.echo_authorization(429), Fault.echo_authorization(401))
    server.script("Passage: Mirrow Abbey", *[Fault.echo_authorization(503)] * 3)
    server.answer("Passage: The Ulva Lighthouse",
                  "**Question:** In which year was the Ulva Lighthouse first lit?\n**Answer:** 1869")
    server.script("Question: In which year was the Ulva Lighthouse first lit?", Fault.echo_authorization(403))
    config = EclekticConfig(min_chars=50)
    with Warehouse(tmp_path / "home") as wh:
        for page_id, (title, text) in ARTICLES.items():
            add_document(wh, "en", page_id, title, text, qid=f"Q{page_id}")
        select_candidates(wh, "b", "en", ["en"], config, "fp")
        client = fake_client(wh, server, api_key_env=KEY_ENV)
        generate_items(wh, client, "b", "en", "fake", config, "fp")
        prescreen(wh, client, "b", "fake", QcConfig(), "fp")

        assert {call.headers["authorization"] for call in server.calls} == {f"Bearer {KEY}"}
        reasons = dict(wh.query("SELECT item_id, reason FROM qa_items WHERE benchmark = 'b'"))
        assert reasons["en:1"].startswith("permanent: ") and "Incorrect credentials provided: Bearer [redacted]" in reasons["en:1"]
        assert reasons["en:2"].startswith("transient, gave up after 3 attempts: ") and "[redacted]" in reasons["en:2"]
        assert reasons["en:3"] is None
        review = wh.scalar("SELECT any_value(reason) FROM qa_reviews WHERE item_id = 'en:3' AND reviewer = 'llm:fake'")
        assert review.startswith("pre-screen call failed: permanent: ") and "[redacted]" in review
        assert wh.scalar("SELECT count(*) FROM llm_calls WHERE contains(error, '[redacted]')") == 3
        columns = wh.query("SELECT table_name, column_name FROM information_schema.columns")
        leaks = [f"{table}.{column}" for table, column in columns
                 if wh.scalar(f'SELECT count(*) FROM "{table}" WHERE contains(CAST("{column}" AS VARCHAR), ?)', [KEY])]
    assert leaks == []
    assert "Bearer [redacted]" in caplog.text  # the retries were logged, masked
    assert KEY not in caplog.text
    printed = capfd.readouterr()
    assert KEY not in printed.out + printed.err
