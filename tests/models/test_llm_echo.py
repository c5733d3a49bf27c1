"""A model that repeats its prompt before answering gets its own answers recorded, never the worked examples'.

Through the ECLEKTIC stages (generation, then the pre-screen) against the loopback fake endpoint, as a chat model
repeating the prompt and as a completion endpoint returning the prompt with the completion.  The templates'
examples would give the pair "In which city were the bells of the Harlow Clock Tower cast? — Leeds" and the
verdicts natural yes, answerable yes, correct no; the model says otherwise (as a chat model in the labelled
lines it was once asked for, as a completion model in the JSON object it is asked for now).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.qa.eclektic import EclekticConfig, generate_items, select_candidates
from tasks.qa.qc import QcConfig, prescreen
from tasks.warehouse.db import Warehouse
from tests.support.chat_replies import echoing
from tests.support.fake_llm_server import FakeLLMServer, fake_client
from tests.support.warehouse_docs import add_document

TEXT = "The Kestel Mill is a tide mill on the Ulva estuary. It was built in 1790 and restored in 1985."
QUESTION = "When was the Kestel Mill built?"


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_an_echoing_model_gets_its_own_pair_and_verdicts_recorded(tmp_path: Path, server: FakeLLMServer, mode: str) -> None:
    if mode == "chat":  # the prompt repeated, re-wrapped into one line, then a markdown answer
        server.answer("Passage: The Kestel Mill", echoing(f"**Question:** {QUESTION}\n**Answer:** 1790", rewrap=True))
        server.answer(f"Question: {QUESTION}", echoing("- **Natural:** no\n- **Answerable:** no\n- **Correct:** yes"))
    else:  # the endpoint sends the prompt back with the completion, which carries the few-shot pattern on
        server.answer("Passage: The Kestel Mill", lambda prompt: f"{prompt} {QUESTION}\nAnswer: 1790\n\nPassage: More")
        verdicts = '{"justification": "Odd wording.", "natural": "no", "answerable": "no", "correct": "yes"}'
        server.answer(f"Question: {QUESTION}", lambda prompt: f"{prompt}\n{verdicts}\n\nDocument:")
    config = EclekticConfig(min_chars=50)
    with Warehouse(tmp_path / "home") as wh:
        add_document(wh, "en", 1, "Kestel Mill", TEXT, qid="Q1")
        select_candidates(wh, "b", "en", ["en"], config, "fp")
        client = fake_client(wh, server, mode=mode)
        generate_items(wh, client, "b", "en", "fake", config, "fp")
        prescreen(wh, client, "b", "fake", QcConfig(), "fp")
        item = wh.query_dicts("SELECT question, answer, status FROM qa_items WHERE benchmark = 'b'")
        verdicts = dict(wh.query("SELECT check_name, verdict FROM qa_reviews WHERE reviewer = 'llm:fake'"))
    assert item == [{"question": QUESTION, "answer": "1790", "status": "ok"}]
    assert verdicts == {"natural": "fail", "answerable": "fail", "answer_correct": "pass"}
    assert [call.path for call in server.calls] == [f"/v1/{'chat/' if mode == 'chat' else ''}completions"] * 2
