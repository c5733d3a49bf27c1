"""The XRAG question chain: reading its replies, and the four steps end to end against the loopback fake endpoint.

The fake endpoint answers every step as a chat model would (tests/support/chat_replies.py: a preamble, markdown, the
answer made from the prompt's own instance); scripted replies inject faults (an unusable summary, 500s, a refused
request, a budget stop) or a model that repeats its prompts first.  The content proves nothing about question
quality but lets every item be followed through the chain to its recorded status.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from tasks.errors import BabelbenchError
from tasks.llm import Budget, LLMClient
from tasks.qa.xrag import generate_questions
from tasks.qa.xrag_config import QUESTION_TYPES, XragConfig
from tasks.qa.xrag_pairs import check_related, find_pairs
from tasks.qa.xrag_questions import TypedQuestion, parse_summary, parse_typed_questions
from tasks.warehouse.db import Warehouse
from tests.support import chat_replies
from tests.support.chat_replies import NEEDLES, echoing
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client, prompt_of

# --- reading the replies -------------------------------------------------------------------------------------------


def _questions(text: str, *, primed: str = "", limit: int = 2, facts_a: int = 3, facts_b: int = 2) -> list[TypedQuestion]:
    parsed = parse_typed_questions(text, facts_a=facts_a, facts_b=facts_b, limit=limit, max_words=25, lang="en",
                                   primed=primed)
    assert parsed.ok, parsed.reason
    return parsed.value


def test_questions_and_the_facts_they_use_are_read_from_a_primed_completion() -> None:
    reply = (" Which is longer, the Velna or the Mirra?\nUses: A1, B2\n"
             "Question: How many metres higher is the source of the Mirra than Lake Ondra?\nUses: a3 and B1\n")
    assert _questions(reply, primed="Question:") == [
        TypedQuestion("Which is longer, the Velna or the Mirra?", (("A", 1), ("B", 2))),
        TypedQuestion("How many metres higher is the source of the Mirra than Lake Ondra?", (("A", 3), ("B", 1))),
    ]


def test_a_completion_primed_with_uses_reads_the_facts_named_before_each_question() -> None:
    reply = ("2, B1\nQuestion: Which opened first, the Velna Bridge or the Mirra Weir? — the Velna Bridge\n"
             "Uses: A1, B2\nQuestion: Did Petra Voss design the Mirra Weir?\nUses: B7\n")
    assert _questions(reply, primed="Uses: A") == [
        TypedQuestion("Which opened first, the Velna Bridge or the Mirra Weir?", (("A", 2), ("B", 1))),
        TypedQuestion("Did Petra Voss design the Mirra Weir?", (("A", 1), ("B", 2))),
    ]  # the copied " — answer" tail is cut; the trailing "Uses: B7" starts a third question that never came


def test_markdown_numbering_and_a_uses_note_on_the_question_line_are_tolerated() -> None:
    reply = ("Here you go:\n**Question 1:** When was Tarsk Cathedral finished? (Uses: A-2, B#1)\n\n"
             "2. Question: Which city has more inhabitants, Tarsk or Orvik?\n**Facts used:** A1, A1, B2")
    questions = _questions(reply)
    assert [q.question for q in questions] == [
        "When was Tarsk Cathedral finished?", "Which city has more inhabitants, Tarsk or Orvik?"]
    assert [q.refs for q in questions] == [["A2", "B1"], ["A1", "B2"]]  # a repeated fact counts once
    assert all(q.problem is None for q in questions)


def test_questions_past_the_limit_are_not_kept() -> None:
    reply = "Question: Q one?\nUses: A1, B1\nQuestion: Q two?\nUses: A2, B1\nQuestion: Q three?\nUses: A3, B2"
    assert [q.question for q in _questions(reply, limit=2)] == ["Q one?", "Q two?"]


@pytest.mark.parametrize(("reply", "problem"), [
    ("Question: Which river is longer?", "no 'Uses:' line naming the facts the question combines"),
    ("Question: Which river is longer?\nUses: both", "the 'Uses:' line names no fact (A1, B2, …)"),
    ("Question: Which river is longer?\nUses: A1, A2", "uses no fact of article B: the question must need both articles"),
    ("Question: Which river is longer?\nUses: A4, B1", "uses A4, but article A has 3 facts"),
    ("Question: Which river is longer?\nUses: A1, B3", "uses B3, but article B has 2 facts"),
    ("Question: " + " ".join(["word"] * 25) + " more?\nUses: A1, B1", "26 words > 25"),
    ("Question: When did the Velna Bridge open, and who designed it?\nUses: A1, B1", "two questions joined in one"),
    ("Question: When did the bridge open? Who designed it?\nUses: A1, B1", "two questions joined in one"),
])
def test_a_question_breaking_a_rule_is_kept_with_the_rule_it_breaks(reply: str, problem: str) -> None:
    [question] = _questions(reply)
    assert question.problem == problem


def test_and_inside_one_question_is_not_a_join() -> None:
    [question] = _questions("Question: How many clubs play in the Velna League and the Kelda Cup together?\nUses: A1, B1")
    assert question.problem is None


def test_a_reply_without_any_question_fails() -> None:
    parsed = parse_typed_questions("I cannot write that.", facts_a=1, facts_b=1, limit=2, max_words=25, lang="en")
    assert (parsed.status, parsed.reason) == ("parse_failed", "no 'Question: …' in the reply")


def test_a_summary_is_cut_to_the_whole_sentences_within_the_word_limit() -> None:
    reply = "Die Velna ist ein Fluss. Sie fließt durch Tarsk und Orvik. Ihr Einzugsgebiet ist groß.</summary>"
    kept = parse_summary(reply, "de", 11, primed="<summary>")
    assert kept.value == "Die Velna ist ein Fluss. Sie fließt durch Tarsk und Orvik."
    too_long = parse_summary(reply, "de", 4, primed="<summary>")
    assert (too_long.status, too_long.reason) == ("parse_failed", "the summary's first sentence alone has more than 4 words")
    assert parse_summary("Velna is a river.", "en", 180).reason == "no <summary> in the reply"


# --- the chain against the fake endpoint -----------------------------------------------------------------------------

CONFIG = XragConfig(max_pairs=2)  # two pivot–pivot and two en–de pairs
LANGS = ["en", "de"]
LANGUAGE = {"en": "English", "de": "German"}


@pytest.fixture
def wh(sample_home: Path) -> Iterator[Warehouse]:
    with Warehouse(sample_home) as warehouse:
        yield warehouse


def _chat_client(wh: Warehouse, server: FakeLLMServer) -> LLMClient:
    """A client of the fake endpoint answering like a chat model."""
    chat_replies.install(server)
    return fake_client(wh, server)


def _related_pairs(wh: Warehouse, client: LLMClient) -> list[dict]:
    """Pairs found and checked (the chat model says every pair is related)."""
    find_pairs(wh, "x", LANGS, CONFIG, "fp-pairs")
    check_related(wh, client, "x", "fake", CONFIG, "fp-check")
    pairs = wh.query_dicts(
        "SELECT p.pair_id, p.lang_a, p.page_a, p.lang_b, p.page_b, p.status, da.title AS title_a, db.title AS title_b"
        " FROM related_pairs p JOIN documents da ON da.lang = p.lang_a AND da.page_id = p.page_a"
        " JOIN documents db ON db.lang = p.lang_b AND db.page_id = p.page_b"
        " WHERE p.benchmark = 'x' ORDER BY p.pair_id")
    assert len(pairs) == 4 and {p["status"] for p in pairs} == {"related"}
    return pairs


def _articles(pairs: list[dict]) -> set[tuple[str, int, str]]:
    return {(p[f"lang_{s}"], p[f"page_{s}"], p[f"title_{s}"]) for p in pairs for s in "ab"}


def _summary_needle(lang: str, title: str) -> str:
    """Found only in the summary prompt of that article (see xrag_summary.j2)."""
    return f"Article ({LANGUAGE[lang]}): {title}\n"


def _items(wh: Warehouse) -> dict[str, dict]:
    return {r["item_id"]: r for r in wh.query_dicts("SELECT * FROM qa_items WHERE benchmark = 'x' AND recipe = 'xrag'")}


def _slots(pairs: list[dict], *, unasked: Collection[str] = ()) -> set[str]:
    """Every question slot: the two questions the chat model writes per pair and type, or one slot per type for
    the pairs in ``unasked``, whose questions were never asked (an earlier step failed or the budget ran out)."""
    return {f"{p['pair_id']}:{qtype}:{n}" for p in pairs for qtype in QUESTION_TYPES
            for n in ((1,) if p["pair_id"] in unasked else (1, 2))}


def _with(pairs: list[dict], lang: str, page_id: int) -> set[str]:
    """The ids of the pairs that include the article."""
    return {p["pair_id"] for p in pairs if (lang, page_id) in {(p["lang_a"], p["page_a"]), (p["lang_b"], p["page_b"])}}


def test_with_chat_replies_every_slot_is_recorded_through_all_four_steps(wh: Warehouse, server: FakeLLMServer) -> None:
    client = _chat_client(wh, server)
    pairs = _related_pairs(wh, client)
    output = generate_questions(wh, client, "x", "fake", CONFIG, "fp-q")
    items = _items(wh)
    assert set(items) == _slots(pairs) and output.rows == 32
    assert {i["status"] for i in items.values()} == {"ok"}
    for pair in pairs:
        for n in (1, 2):
            item = items[f"{pair['pair_id']}:comparison:{n}"]
            assert (item["lang"], item["qtype"], item["generator"], item["fingerprint"]) == (
                "en", "comparison", "fake", "fp-q")
            assert item["question"] == (
                f"What links fact {n} of {pair['title_a']} to fact {n} of {pair['title_b']} (comparison)?")
            assert json.loads(item["documents"]) == [
                {"lang": pair["lang_a"], "page_id": pair["page_a"], "title": pair["title_a"]},
                {"lang": pair["lang_b"], "page_id": pair["page_b"], "title": pair["title_b"]}]
            used = json.loads(item["used_pairs"])
            # the model's "Uses: An, Bn" line: the n-th fact of A and the n-th of B
            assert [(u["ref"], u["lang"], u["page_id"]) for u in used] == [
                (f"A{n}", pair["lang_a"], pair["page_a"]), (f"B{n}", pair["lang_b"], pair["page_b"])]
            assert item["answer"] == "; ".join(u["answer"] for u in used)  # the facts' answers, as the model wrote
            assert item["request_hash"]
    steps = Counter(step for (step,) in wh.query("SELECT step FROM qa_steps WHERE benchmark = 'x' AND status = 'ok'"))
    articles = len(_articles(pairs))
    assert steps == {"summary": articles, "simple_qa": articles, "question": 16, "answer": 32}
    keys = {key for (key,) in wh.query("SELECT step_key FROM qa_steps WHERE step = 'summary'")}
    assert keys == {f"{lang}:{page_id}" for lang, page_id, _ in _articles(pairs)}


def test_a_model_repeating_its_prompts_first_still_gets_its_own_outputs_recorded(
    wh: Warehouse, server: FakeLLMServer
) -> None:
    client = _chat_client(wh, server)
    for template, reply, rewrap in (("xrag_related", chat_replies.related(), False),
                                    ("xrag_summary", chat_replies.summary, False),
                                    ("xrag_simple_qa", chat_replies.simple_qa, True),
                                    ("xrag_q", chat_replies.typed_questions, True),
                                    ("xrag_answer", chat_replies.answer, False)):
        server.answer(NEEDLES[template], echoing(reply, rewrap=rewrap))
    pairs = _related_pairs(wh, client)
    generate_questions(wh, client, "x", "fake", CONFIG, "fp-q")
    items = _items(wh)
    assert set(items) == _slots(pairs) and {i["status"] for i in items.values()} == {"ok"}
    # the worked examples are about the Lorne Viaduct, the Pellow Tunnel and Ada Quill; the sample never names them
    outputs = [parsed for (parsed,) in wh.query("SELECT parsed FROM qa_steps WHERE benchmark = 'x'")]
    assert len(outputs) == 2 * len(_articles(pairs)) + 16 + 32
    assert not [parsed for parsed in outputs if any(name in parsed for name in ("Lorne", "Pellow", "Ada Quill"))]
    item = items[f"{pairs[0]['pair_id']}:set:2"]
    assert item["question"] == f"What links fact 2 of {pairs[0]['title_a']} to fact 2 of {pairs[0]['title_b']} (set)?"


def test_an_unusable_summary_fails_every_item_of_its_pairs_with_that_reason(wh: Warehouse, server: FakeLLMServer) -> None:
    client = _chat_client(wh, server)
    pairs = _related_pairs(wh, client)
    lang, page_id, title = pairs[0]["lang_a"], pairs[0]["page_a"], pairs[0]["title_a"]
    server.script(_summary_needle(lang, title), Fault.text("Sorry, I will not summarise this."))
    generate_questions(wh, client, "x", "fake", CONFIG, "fp-q")
    items = _items(wh)
    assert set(items) == _slots(pairs, unasked=_with(pairs, lang, page_id))
    reason = f"summary {lang}:{page_id}: no <summary> in the reply"
    for pair in pairs:
        touched = (lang, page_id) in {(pair["lang_a"], pair["page_a"]), (pair["lang_b"], pair["page_b"])}
        for qtype in QUESTION_TYPES:
            item = items[f"{pair['pair_id']}:{qtype}:1"]
            expected = ("parse_failed", reason, None) if touched else ("ok", None, item["question"])
            assert (item["status"], item["reason"], item["question"]) == expected
    assert any(i["status"] == "ok" for i in items.values())
    step = wh.query_dicts("SELECT * FROM qa_steps WHERE step = 'simple_qa' AND step_key = ?", [f"{lang}:{page_id}"])[0]
    assert (step["status"], step["reason"], step["request_hash"]) == ("parse_failed", reason, None)


def test_500s_are_retried_and_a_refused_call_fails_its_items(wh: Warehouse, server: FakeLLMServer) -> None:
    client = _chat_client(wh, server)
    pairs = _related_pairs(wh, client)
    articles = sorted(_articles(pairs))
    flaky, refused = articles[0], articles[-1]
    server.script(_summary_needle(flaky[0], flaky[2]), Fault.with_status(500), Fault.with_status(503))
    server.script(_summary_needle(refused[0], refused[2]), Fault.with_status(400, "request refused"))
    generate_questions(wh, client, "x", "fake", CONFIG, "fp-q")
    assert len(server.calls_about(_summary_needle(flaky[0], flaky[2]))) == 3
    assert len(server.calls_about(_summary_needle(refused[0], refused[2]))) == 1  # permanent: not retried
    items = _items(wh)
    assert set(items) == _slots(pairs, unasked=_with(pairs, refused[0], refused[1]))
    for pair in pairs:
        members = {(pair["lang_a"], pair["page_a"]), (pair["lang_b"], pair["page_b"])}
        for qtype in QUESTION_TYPES:
            item = items[f"{pair['pair_id']}:{qtype}:1"]
            if refused[:2] in members:
                assert item["status"] == "call_failed"
                assert item["reason"].startswith(f"summary {refused[0]}:{refused[1]}: permanent:")
                assert "request refused" in item["reason"]
            else:
                assert item["status"] == "ok"


def test_a_budget_stop_leaves_later_steps_skipped_and_a_rerun_completes_without_repeating_calls(
    wh: Warehouse, server: FakeLLMServer
) -> None:
    client = _chat_client(wh, server)
    pairs = _related_pairs(wh, client)
    checks = len(server.calls)
    articles = len(_articles(pairs))
    # a summary and a simple-QA call per article, then five question calls of two questions each
    generate_questions(wh, client, "x", "fake", CONFIG, "fp-1", budget=Budget(max_calls=2 * articles + 5))
    first = _items(wh)
    assert set(first) <= _slots(pairs) and len(first) == 5 * 2 + (16 - 5)  # the unasked slots: one per pair and type
    assert {i["status"] for i in first.values()} == {"skipped_budget"}
    asked = [i for i in first.values() if i["question"] is not None]
    assert len(asked) == 10  # the five question calls' questions; their answers were not reached
    assert all(i["reason"].startswith("answer ") for i in asked)
    assert all(i["reason"].startswith("question ") for i in first.values() if i["question"] is None)
    answers = wh.query("SELECT DISTINCT status FROM qa_steps WHERE step = 'answer'")
    assert answers == [("skipped_budget",)]

    generate_questions(wh, client, "x", "fake", CONFIG, "fp-2")
    second = _items(wh)
    assert set(second) == _slots(pairs) and {i["status"] for i in second.values()} == {"ok"}
    prompts = Counter(prompt_of(call.body) for call in server.calls[checks:])
    assert max(prompts.values()) == 1  # nothing paid twice
    assert len(prompts) == 2 * articles + 16 + 32


def test_unchecked_pairs_are_refused_with_what_to_run(wh: Warehouse, server: FakeLLMServer) -> None:
    find_pairs(wh, "x", LANGS, CONFIG, "fp-pairs")
    with pytest.raises(BabelbenchError, match=r"benchmark x: 4 related pairs are unchecked; run the relatedness check"):
        generate_questions(wh, fake_client(wh, server), "x", "fake", CONFIG, "fp-q")
    assert server.calls == []
