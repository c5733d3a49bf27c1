"""XRAG pairing on the bundled sample (expectations read off the sample's YAML), the date window and cap on
synthetic articles, and the relatedness check against the loopback fake endpoint."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from tasks.llm import Budget
from tasks.qa import entity_join
from tasks.qa.pairing_articles import Article, ArticleTable, EntityCodes
from tasks.qa.xrag_config import XragConfig
from tasks.qa.xrag_pairs import Pairing, candidate_pairs, check_related, find_pairs, parse_related
from tasks.warehouse.db import Warehouse
from tests.support import chat_replies
from tests.support.chat_replies import echoing
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client
from tests.support.tiny_models import build_bi_encoder
from tests.support.warehouse_docs import add_document

ALL_PAIRS = XragConfig(max_days_apart=None, max_pairs=10_000)
VELNA, MIRRA, LAKE_ONDRA, KELDA_MOUNTAINS, TARSK = "Q9100001", "Q9100002", "Q9100003", "Q9100004", "Q9100005"
VELNA_LEAGUE, FC_TARSK, SK_ORVIK, TARSK_CATHEDRAL = "Q9100021", "Q9100022", "Q9100023", "Q9100028"

PairKey = tuple[tuple[str, str], tuple[str, str]]  # ((lang, title) of A, (lang, title) of B)


def _pairs(wh: Warehouse, benchmark: str) -> dict[PairKey, dict]:
    rows = wh.query_dicts(
        "SELECT p.*, da.title AS title_a, db.title AS title_b, da.timestamp AS ts_a, db.timestamp AS ts_b"
        " FROM related_pairs p JOIN documents da ON da.lang = p.lang_a AND da.page_id = p.page_a"
        " JOIN documents db ON db.lang = p.lang_b AND db.page_id = p.page_b WHERE p.benchmark = ?", [benchmark])
    return {((r["lang_a"], r["title_a"]), (r["lang_b"], r["title_b"])): r for r in rows}


@pytest.fixture(scope="module")
def pairing_home(sample_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("xrag-pairs") / "home"
    shutil.copytree(sample_corpus, home)
    with Warehouse(home) as wh:
        find_pairs(wh, "all", ["en", "de"], ALL_PAIRS, "fp-all")
        find_pairs(wh, "window", ["en", "de"], XragConfig(max_pairs=10_000), "fp-window")
    return home


@pytest.fixture(scope="module")
def all_pairs(pairing_home: Path) -> dict[PairKey, dict]:
    with Warehouse(pairing_home) as wh:
        return _pairs(wh, "all")


def _find(pairs: dict[PairKey, dict], a: tuple[str, str], b: tuple[str, str]) -> dict | None:
    return pairs.get((a, b)) or pairs.get((b, a))


@pytest.mark.parametrize(("a", "b", "shared"), [
    # Velna names Mirra and Tarsk; Mirra names Velna and Tarsk: each one's subject plus the town where they meet.
    ("Velna", "Mirra", [VELNA, MIRRA, TARSK]),
    # Lake Ondra names the Kelda Mountains and the Velna; the Kelda Mountains name Lake Ondra, the Velna and the Mirra.
    ("Lake Ondra", "Kelda Mountains", [VELNA, LAKE_ONDRA, KELDA_MOUNTAINS]),
    # each names the other and nothing else in common: two shared entities by the mention rule
    ("Tarsk", "Tarsk Cathedral", [TARSK, TARSK_CATHEDRAL]),
    # the Derby names FC Tarsk, SK Orvik and the League; the League names both clubs
    ("Velna League", "Velna Derby", [VELNA_LEAGUE, FC_TARSK, SK_ORVIK]),
])
def test_english_articles_sharing_two_entities_are_pairs(all_pairs: dict[PairKey, dict], a: str, b: str,
                                                         shared: list[str]) -> None:
    pair = _find(all_pairs, ("en", a), ("en", b))
    assert pair is not None, f"{a} – {b} should be a pair"
    assert pair["evidence"] == sorted(shared) and pair["score"] == len(shared)
    assert pair["status"] == "candidate" and pair["method"] == "entities"
    assert pair["page_a"] < pair["page_b"]
    assert pair["pair_id"] == f"en:{pair['page_a']}~en:{pair['page_b']}"


@pytest.mark.parametrize(("a", "b"), [
    ("Velna", "Tarsk Cathedral"),  # the cathedral names only Tarsk, which the Velna names too: one shared entity
    ("Brennmoor Athletic", "Velna Derby"),  # both name the Velna League, nothing else in common
])
def test_english_articles_sharing_one_entity_are_not(all_pairs: dict[PairKey, dict], a: str, b: str) -> None:
    assert _find(all_pairs, ("en", a), ("en", b)) is None


def test_a_cross_language_pair_joins_different_entities_never_the_same_one(
    all_pairs: dict[PairKey, dict], pairing_home: Path
) -> None:
    # de "Mirra" names the Velna and Tarsk; en "Velna" names the Mirra and Tarsk.
    pair = all_pairs[(("en", "Velna"), ("de", "Mirra"))]
    assert pair["evidence"] == [VELNA, MIRRA, TARSK]
    assert pair["pair_id"] == f"en:{pair['page_a']}~de:{pair['page_b']}"
    # en and de "Velna" share everything but are one entity: not a pair
    assert (("en", "Velna"), ("de", "Velna")) not in all_pairs
    with Warehouse(pairing_home) as wh:
        same_entity = wh.scalar(
            "SELECT count(*) FROM related_pairs p JOIN documents da ON da.lang = p.lang_a AND da.page_id = p.page_a"
            " JOIN documents db ON db.lang = p.lang_b AND db.page_id = p.page_b WHERE da.qid = db.qid")
    assert same_entity == 0
    assert {lang_a for (lang_a, _), _ in all_pairs} == {"en"}  # the pivot is always side A


def test_the_date_window_keeps_exactly_the_pairs_within_14_days_on_the_samples_revision_timestamps(
        pairing_home: Path, all_pairs: dict[PairKey, dict]) -> None:
    def gap(pair: dict) -> float:
        return abs(datetime.fromisoformat(pair["ts_a"]) - datetime.fromisoformat(pair["ts_b"])).total_seconds() / 86400

    with Warehouse(pairing_home) as wh:
        window = _pairs(wh, "window")
    near = {key for key, pair in all_pairs.items() if gap(pair) <= 14}
    assert 0 < len(near) < len(all_pairs)  # the window (the only difference from "all") cuts some
    assert set(window) == near
    assert all(pair["days_apart"] == pytest.approx(gap(pair)) and pair["status"] == "candidate"
               for pair in window.values())


# --- synthetic articles --------------------------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _article(lang: str, page_id: int, qid: str | None, entities: set[str], days: float | None = 0.0) -> Article:
    stamp = None if days is None else T0 + timedelta(days=days)
    return Article(lang, page_id, qid, f"{lang}-{page_id}", stamp, frozenset(entities))


def _table(lang: str, articles: list[Article], codes: EntityCodes) -> ArticleTable:
    table = ArticleTable(lang, codes)
    for a in articles:
        table.add(a.page_id, a.qid, a.title, a.timestamp, [codes.code(qid) for qid in a.entities], a.first_seen)
    return table


def _candidates(pivot: list[Article], others: dict[str, list[Article]], config: XragConfig) -> Pairing:
    """:func:`candidate_pairs` over these articles, their entities coded once for every language."""
    codes = EntityCodes()
    return candidate_pairs(_table("en", pivot, codes), {lang: _table(lang, articles, codes)
                                                        for lang, articles in others.items()}, config)


def _by_id(pairs: list) -> dict[str, tuple[str, str | None]]:
    return {p.pair_id: (p.status, p.reason) for p in pairs}


def test_the_window_applies_only_when_both_articles_have_a_timestamp() -> None:
    pivot = [
        _article("en", 1, "Q1", {"Q8", "Q9"}, days=0),
        _article("en", 2, "Q2", {"Q8", "Q9"}, days=14),     # exactly 14 days after 1: kept
        _article("en", 3, "Q3", {"Q8", "Q9"}, days=14.5),   # 14.5 after 1, 0.5 after 2
        _article("en", 4, "Q4", {"Q8", "Q9"}, days=None),   # no timestamp: never filtered by date
    ]
    pairs = _candidates(pivot, {}, XragConfig(max_pairs=100)).pairs
    assert _by_id(pairs) == {  # en:1–en:3, 14.5 days apart, is not a pair
        "en:1~en:2": ("candidate", None),
        "en:1~en:4": ("candidate", None),
        "en:2~en:3": ("candidate", None),
        "en:2~en:4": ("candidate", None),
        "en:3~en:4": ("candidate", None),
    }
    assert {p.pair_id: p.days_apart for p in pairs}["en:2~en:3"] == pytest.approx(0.5)
    assert all(p.days_apart is None for p in pairs if "en:4" in p.pair_id)
    assert len(_candidates(pivot, {}, XragConfig(max_days_apart=None)).pairs) == 6


def test_the_cap_keeps_the_highest_scores_then_the_lowest_ids_per_group() -> None:
    pivot = [
        _article("en", 1, "Q1", {"Q7", "Q8", "Q9"}),
        _article("en", 2, "Q2", {"Q7", "Q8", "Q9"}),  # 1–2 share 3
        _article("en", 3, "Q3", {"Q7", "Q8"}),        # 1–3, 2–3 share 2
    ]
    german = [
        _article("de", 10, "Q5", {"Q7", "Q8"}),  # shares 2 with each English article
        _article("de", 11, "Q1", {"Q7", "Q8", "Q9"}),  # the same entity as en:1, shares 3 with en:2, 2 with en:3
    ]
    pairing = _candidates(pivot, {"de": german}, XragConfig(max_pairs=2))
    # monolingual: 1–2 (3 shared), then 1–3 before 2–3 (2 each, lower pair id); crosslingual: 2–de:11 (3 shared),
    # then 1–de:10 before 2–de:10, 3–de:10 and 3–de:11
    assert _by_id(pairing.pairs) == dict.fromkeys(["en:1~en:2", "en:1~en:3", "en:2~de:11", "en:1~de:10"],
                                                  ("candidate", None))
    assert pairing.beyond == {"monolingual": 1, "crosslingual en–de": 3}


def test_min_shared_kinds_and_articles_without_a_qid() -> None:
    pivot = [_article("en", 1, "Q1", {"Q8"}), _article("en", 2, None, {"Q8", "Q9"}), _article("en", 3, "Q3", {"Q1"})]
    french = [_article("fr", 20, None, {"Q8", "Q9"})]
    pairs = _by_id(_candidates(pivot, {"fr": french}, XragConfig(min_shared_entities=1)).pairs)
    # min 1: 1–2 share Q8; 1–3 share Q1 (3 mentions 1); no cross pair with an article lacking a QID
    assert set(pairs) == {"en:1~en:2", "en:1~en:3"}
    assert _candidates(pivot, {"fr": french}, XragConfig(pair_kinds=("crosslingual",), min_shared_entities=1)).pairs == []
    assert _candidates(pivot, {}, XragConfig(min_shared_entities=3)).pairs == []


def test_an_entity_in_more_articles_than_the_limit_does_not_count_towards_a_pair() -> None:
    # Q7 is in four English articles; with a limit of 3 it no longer counts, and 1–2 share only Q8
    pivot = [_article("en", 1, "Q1", {"Q7", "Q8"}), _article("en", 2, "Q2", {"Q7", "Q8"}),
             _article("en", 3, "Q3", {"Q7"}), _article("en", 4, "Q4", {"Q7"})]
    assert {p.pair_id for p in _candidates(pivot, {}, XragConfig(max_entity_articles=4)).pairs} == {"en:1~en:2"}
    limited = _candidates(pivot, {}, XragConfig(max_entity_articles=3))
    assert limited.pairs == [] and limited.hubs == {"Q7"}
    loose = _candidates(pivot, {}, XragConfig(max_entity_articles=3, min_shared_entities=1))
    assert [(p.pair_id, p.shared) for p in loose.pairs] == [("en:1~en:2", ("Q8",))]


def _brute_force(pivot: list[Article], german: list[Article], config: XragConfig) -> tuple[dict, Counter]:
    """The rule as the docs state it, over every pair: the kept pair ids per group with their shared entities, and
    how many more met the rule."""
    def hubs(articles: list[Article]) -> set[str]:
        counts = Counter(entity for article in articles for entity in article.evidence)
        return {entity for entity, n in counts.items() if n > config.max_entity_articles}

    def days(a: Article, b: Article) -> float | None:
        return None if a.timestamp is None or b.timestamp is None else abs((a.timestamp - b.timestamp).days)

    groups = {"monolingual": ([(a, b) for a in pivot for b in pivot if b.page_id > a.page_id], hubs(pivot)),
              "crosslingual en–de": ([(a, b) for a in pivot for b in german if a.qid and b.qid and a.qid != b.qid],
                                     hubs(pivot) | hubs(german))}
    kept, beyond = {}, Counter()
    for group, (pairs, common) in groups.items():
        met = sorted(((-len((a.evidence & b.evidence) - common), f"{a.key}~{b.key}", (a.evidence & b.evidence) - common)
                      for a, b in pairs if len((a.evidence & b.evidence) - common) >= config.min_shared_entities
                      and (days(a, b) is None or days(a, b) <= config.max_days_apart)))
        kept |= {pair_id: tuple(sorted(shared)) for _, pair_id, shared in met[: config.max_pairs]}
        beyond[group] = max(0, len(met) - config.max_pairs)
    return kept, +beyond


@pytest.mark.parametrize("rows", [entity_join.JOIN_ROWS, 12, 1])
@pytest.mark.parametrize("seed", range(40))
def test_the_join_keeps_what_the_rule_over_every_pair_keeps(seed: int, rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random articles (whole days apart, some without a date or QID, entities from a small skewed vocabulary so
    some are hubs): the pairs, their evidence and the counts past the cap equal those of the rule applied to every
    pair one by one, whether the pivot's articles are joined all at once, a few at a time or one by one."""
    monkeypatch.setattr(entity_join, "JOIN_ROWS", rows)
    rng = random.Random(seed)
    vocabulary = [f"Q{n}" for n in range(1, 40)]

    def article(lang: str, page_id: int) -> Article:
        qid = rng.choice([None, *vocabulary]) if rng.random() < 0.2 else rng.choice(vocabulary)
        mentions = set(rng.choices(vocabulary, weights=[1 / n for n in range(1, 40)], k=rng.randint(0, 8)))
        return _article(lang, page_id, qid, mentions, days=None if rng.random() < 0.1 else rng.randint(0, 40))

    pivot = [article("en", page_id) for page_id in rng.sample(range(1, 500), 30)]
    german = [article("de", page_id) for page_id in rng.sample(range(1, 500), 25)]
    config = XragConfig(min_shared_entities=rng.randint(1, 3), max_pairs=rng.randint(1, 40),
                        max_entity_articles=rng.randint(5, 30), max_days_apart=rng.choice([0, 7, 14, 30]))
    pairing = _candidates(pivot, {"de": german}, config)
    kept, beyond = _brute_force(pivot, german, config)
    assert {p.pair_id: p.shared for p in pairing.pairs} == kept
    assert pairing.beyond == beyond
    assert all(p.score == len(p.shared) for p in pairing.pairs)


# --- the relatedness check -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "verdict"), [
    ('{"justification": "The river reaches the town.", "verdict": "yes"}', True),
    ('```json\n{"justification": "Only a shared name.", "verdict": "no"}\n```', False),
    ("Sure. <related>**Yes**</related>", True),
    ("<related>no", False),  # unclosed tag: a reply cut by max_tokens
])
def test_related_verdicts_are_read_from_json_or_a_tag(reply: str, verdict: bool) -> None:
    parsed = parse_related(reply, "en")
    assert parsed.ok and parsed.value.value is verdict


@pytest.mark.parametrize(("reply", "reason"), [
    ("<related>no, they are not</related>", "negated"),
    ("<related>perhaps</related>", "hedged"),
    ('{"justification": "They share', "not valid JSON"),
])
def test_related_replies_without_a_plain_verdict_fail_with_their_reason(reply: str, reason: str) -> None:
    parsed = parse_related(reply, "en")
    assert parsed.status == "parse_failed" and reason in parsed.reason


def _needle(wh: Warehouse, pair: dict, config: XragConfig) -> str:
    """A piece of the check prompt found in this pair's prompt only: the end of A's text and B's title."""
    text_a = wh.scalar("SELECT text FROM documents WHERE lang = ? AND page_id = ?", [pair["lang_a"], pair["page_a"]])
    return f"{text_a[: config.check_chars][-40:]}\nSecond: {pair['title_b']}. "


def test_the_check_sets_each_pairs_status(sample_home: Path, server: FakeLLMServer) -> None:
    config = XragConfig(pair_kinds=("monolingual",), max_pairs=5)
    with Warehouse(sample_home) as wh:
        find_pairs(wh, "b", ["en"], config, "fp-pairs")
        before = _pairs(wh, "b")
        asked = sorted(before.values(), key=lambda p: p["pair_id"])
        assert len(asked) == 5
        no, garbled, refused, echoed_no = asked[0], asked[1], asked[2], asked[3]
        chat_replies.install(server)  # a chat model's reasoning and tagged "yes", unless scripted otherwise
        server.script(_needle(wh, no, config), Fault.text("<related>no</related>"))
        # a model that repeats the prompt, whose worked example says yes, and then says no
        server.answer(_needle(wh, echoed_no, config), echoing(chat_replies.related("no")))
        server.script(_needle(wh, garbled, config), Fault.text("I am not sure."))
        server.script(_needle(wh, refused, config), Fault.with_status(400, "prompt rejected"))
        output = check_related(wh, fake_client(wh, server), "b", "fake", config, "fp-check")
        after = {p["pair_id"]: p for p in _pairs(wh, "b").values()}
    assert {p["status"] for p in asked} == {"candidate"}
    assert len(server.calls) == 5  # one call per pair; the 400 is not retried
    assert output.rows == len(before)
    def verdict(pair: dict) -> tuple[str, str | None]:
        return after[pair["pair_id"]]["status"], after[pair["pair_id"]]["reason"]

    assert verdict(no) == ("unrelated", "the check judged them unrelated")
    assert verdict(echoed_no) == ("unrelated", "the check judged them unrelated")
    assert verdict(garbled)[0] == "parse_failed" and "negated" in verdict(garbled)[1]  # "I am not sure."
    assert after[refused["pair_id"]]["status"] == "call_failed"
    assert "prompt rejected" in after[refused["pair_id"]]["reason"]
    assert verdict(asked[4]) == ("related", None)
    assert {p["fingerprint"] for p in after.values()} == {"fp-check"}


def test_a_budget_stop_leaves_the_rest_skipped_and_a_rerun_resumes(sample_home: Path, server: FakeLLMServer) -> None:
    config = XragConfig(pair_kinds=("monolingual",), max_pairs=4)
    with Warehouse(sample_home) as wh:
        find_pairs(wh, "b", ["en"], config, "fp-pairs")
        chat_replies.install(server)
        client = fake_client(wh, server)
        check_related(wh, client, "b", "fake", config, "fp-1", budget=Budget(max_calls=2))
        first = [p["status"] for p in sorted(_pairs(wh, "b").values(), key=lambda p: p["pair_id"])]
        check_related(wh, client, "b", "fake", config, "fp-2")
        second = {p["status"] for p in _pairs(wh, "b").values()}
    assert sorted(first) == ["related", "related", "skipped_budget", "skipped_budget"]
    assert second == {"related"}
    assert len(server.calls) == 4  # the two answered before the stop came from the cache


EVENT = "Forty warehouses burned down in the old harbour in the dry summer of 1902, and the fire lasted three days."


def test_dense_pairs_join_articles_about_the_same_event_but_never_an_article_and_its_translation(
    sample_corpus: Path, tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    shutil.copytree(sample_corpus, home)
    with Warehouse(home) as wh:
        # three articles with the same title and text, so their embeddings coincide whatever the model: an
        # English one, a German one about the same event (another QID), and the English one's German translation
        add_document(wh, "en", 41991, "Harbour fire of 1902", EVENT, qid="Q9199991")
        add_document(wh, "de", 230991, "Harbour fire of 1902", EVENT, qid="Q9199992")
        add_document(wh, "de", 230992, "Harbour fire of 1902", EVENT, qid="Q9199991")
        texts = [text for (text,) in wh.query("SELECT text FROM documents WHERE text IS NOT NULL")]
        model = build_bi_encoder(texts, tmp_path / "model")
        config = XragConfig(dense_model=str(model), min_similarity=0.9999, dense_k=1, pair_kinds=("crosslingual",),
                            max_days_apart=None, max_pairs=10_000)
        find_pairs(wh, "dense", ["en", "de"], config, "fp-dense")
        dense = wh.query_dicts("SELECT * FROM related_pairs WHERE benchmark = 'dense' AND method = 'dense'")
        by_entities = wh.scalar("SELECT count(*) FROM related_pairs WHERE benchmark = 'dense' AND method = 'entities'")
    assert [(p["lang_a"], p["page_a"], p["lang_b"], p["page_b"]) for p in dense] == [("en", 41991, "de", 230991)]
    assert dense[0]["score"] == pytest.approx(1.0, abs=1e-4) and dense[0]["status"] == "candidate"
    assert dense[0]["evidence"] == [f"cosine {dense[0]['score']:.3f}"]
    # the entity rule still pairs what it did without the dense model
    with Warehouse(home) as wh:
        find_pairs(wh, "entities", ["en", "de"], config.model_copy(update={"dense_model": None}), "fp-entities")
        assert wh.scalar("SELECT count(*) FROM related_pairs WHERE benchmark = 'entities'") == by_entities


@pytest.mark.parametrize("seed", range(30))
def test_the_join_s_parts_cover_the_articles_in_order_each_within_its_rows(seed: int,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Random postings: the parts are consecutive runs covering every left article once, each meeting at most
    ``JOIN_ROWS`` right postings of its entities (counted here pair by pair) unless it is a single article, and none
    could take the next article without passing the bound."""
    rng = np.random.default_rng(seed)
    bound = int(rng.integers(1, 40))
    monkeypatch.setattr(entity_join, "JOIN_ROWS", bound)
    count = int(rng.integers(0, 60))
    left_articles = np.sort(rng.integers(0, max(count, 1), size=int(rng.integers(0, 200)) if count else 0))
    left_entities = rng.integers(0, 25, size=len(left_articles))
    right_entities = rng.integers(0, 25, size=int(rng.integers(0, 300)))
    meets = [sum(int(np.sum(right_entities == e)) for e in left_entities[left_articles == i]) for i in range(count)]
    parts = entity_join._parts(count, (left_articles, left_entities), right_entities)
    assert [i for low, high in parts for i in range(low, high + 1)] == list(range(count))
    for n, (low, high) in enumerate(parts):
        rows = sum(meets[low:high + 1])
        assert rows <= bound or low == high
        if n + 1 < len(parts):
            assert rows + meets[high + 1] > bound


@pytest.mark.parametrize("seed", range(30))
def test_a_part_takes_exactly_the_postings_of_its_articles_and_of_the_entities_they_mention(seed: int) -> None:
    """Random postings in random order: the postings of a range of articles, and of a set of entities, equal
    those a filter over every posting finds, each article's or entity's run in the postings' own order."""
    rng = np.random.default_rng(seed)
    articles = rng.integers(0, 50, size=int(rng.integers(0, 400))).astype(np.int32)
    entities = rng.integers(0, 30, size=len(articles)).astype(np.int32)
    postings = list(zip(articles.tolist(), entities.tolist(), strict=True))
    by_article = entity_join._Runs(articles, entities, 50, by_article=True)
    low = int(rng.integers(0, 50))
    high = int(rng.integers(low, 50))
    found = list(zip(*(part.tolist() for part in by_article.between(low, high)), strict=True))
    assert found == [p for i in range(low, high + 1) for p in postings if p[0] == i]
    by_entity = entity_join._Runs(articles, entities, 30, by_article=False)
    wanted = np.unique(rng.integers(0, 30, size=int(rng.integers(0, 12)))).astype(np.int32)
    found = list(zip(*(part.tolist() for part in by_entity.of(wanted)), strict=True))
    assert found == [p for e in wanted.tolist() for p in postings if p[1] == e]
