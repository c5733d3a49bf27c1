"""Distractor selection on the bundled sample: hybrid candidates, the rejection rules, ranking and the answer check.

The Velna question: "How long is the river that the Mirra joins at Tarsk and
that flows out of Lake Ondra?" — supported by the English Mirra and Lake
Ondra articles, answered "412" (kilometres). In the sample's text, 412 is
written only in the Velna articles (every language), and inside "1412" in
the Tarsk Cathedral articles (its completion year).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from tasks.distractors import DistractorConfig, DistractorQuery, select_distractors
from tasks.distractors.answer_check import llm_answer_check
from tasks.distractors.candidates import DenseHits, fuse
from tasks.distractors.filters import Document, ItemRules, TextForms, jaccard, parse_timestamp, shingles
from tasks.errors import ConfigError
from tasks.index.base import IndexConfig, read_info
from tasks.index.corpus import articles_sql, build_index, index_path
from tasks.index.registry import get_backend
from tasks.placement import DeviceConfig, resolve
from tasks.rankers.dense import DenseRanker
from tasks.text.answer_match import AnswerMatcher, match_form, normalise_answer
from tasks.warehouse.db import Warehouse
from tests.support import chat_replies
from tests.support.chat_replies import echoing
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client, prompt_of
from tests.support.tiny_models import build_bi_encoder
from tests.support.warehouse_docs import add_document

LANGS = ("en", "de", "ja", "zh")
EN_MIRRA, EN_LAKE_ONDRA, EN_VELNA, EN_CATHEDRAL, EN_VELNA_DAB = 41020, 41030, 41010, 41280, 41360
DE_MIRRA, DE_ONDRASEE, DE_VELNA, DE_DOM = 230020, 230030, 230010, 230280
JA_MIRRA, JA_ONDRA, JA_VELNA, JA_CATHEDRAL = 3100020, 3100030, 3100010, 3100280
ZH_MIRRA, ZH_ONDRA, ZH_VELNA = 560020, 560030, 560010
NEAR_COPY = 41990
# The sample's Lake Ondra article without its last sentence, filed under another title and no QID.
NEAR_COPY_TEXT = (
    "Lake Ondra is a mountain lake in the Kelda Mountains and the source of the Velna. It lies at an elevation of "
    "912 metres, covers 46 square kilometres and is up to 121 metres deep. The fishing village of Ondrach stands "
    "on its northern shore."
)

VELNA = DistractorQuery(
    item_id="velna-length",
    queries={
        "en": "How long is the river that the Mirra joins at Tarsk and that flows out of Lake Ondra?",
        "de": "Wie lang ist der Fluss, in den die Mirra bei Tarsk mündet und der aus dem Ondrasee kommt?",
        "ja": "タルスクでミラ川が合流し、オンドラ湖から流れ出る川の全長は？",
        "zh": "在塔尔斯克与米拉河汇合、发源于翁德拉湖的河流全长多少？",
    },
    answers={"en": "412", "de": "412 Kilometer", "ja": "412", "zh": "412 公里"},
    supporting=(("en", EN_MIRRA), ("en", EN_LAKE_ONDRA)),
    doc_langs=LANGS,
)
# A second item, for caps and reruns: "Which club plays at the ground on the Mirra's right bank?" — FC Tarsk.
CLUB = DistractorQuery(
    item_id="mirra-club",
    queries={"en": "Which football club plays at the ground on the right bank of the Mirra?"},
    answers={"en": "FC Tarsk"},
    supporting=(("en", EN_MIRRA), ("en", 41220)),
    doc_langs=("en",),
)


@dataclass(frozen=True)
class Bench:
    wh: Warehouse
    index_paths: dict[str, Path]


@pytest.fixture(scope="module")
def bench(sample_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    """The sample with a near-copy of Lake Ondra added, and a BM25 index per language built as the index stage does."""
    home = tmp_path_factory.mktemp("distractors") / "home"
    shutil.copytree(sample_corpus, home)
    with Warehouse(home) as wh:
        add_document(wh, "en", NEAR_COPY, "Ondra (mountain lake)", NEAR_COPY_TEXT)
        paths = {}
        for lang in LANGS:
            build_index(wh, lang, "tantivy", IndexConfig(), f"index-{lang}")
            paths[lang] = index_path(home, "tantivy", lang, f"index-{lang}")
        yield Bench(wh, paths)


def _run(bench: Bench, benchmark: str, queries: list[DistractorQuery], config: DistractorConfig, **kwargs: Any) -> list[dict]:
    select_distractors(bench.wh, benchmark, queries, config, "fp-" + benchmark, backend="tantivy",
                       index_paths=kwargs.pop("index_paths", bench.index_paths), **kwargs)
    return bench.wh.query_dicts("SELECT * FROM distractors WHERE benchmark = ? ORDER BY item_id, lang, rank", [benchmark])


def _code(row: dict) -> str | None:
    return row["reason"].split(":")[0] if row["reason"] else None


# --- answer normalisation and containment --------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("The VELNA!", "the velna"),
    ("  Maren   Tolk's\tnovel. ", "maren tolk s novel"),
    ("18,300", "18300"),
    ("18.300", "18300"),                 # German thousands separator
    ("18\u202f300 km²", "18300 km2"),    # French narrow no-break space; NFKC turns ² into 2
    ("１８，３００", "18300"),             # full-width digits and comma
    ("3,5 or 3.5", "3.5 or 3.5"),          # a decimal mark between digits is kept as '.'
    ("0.412", "0.412"),                  # a leading 0 never starts a thousands group
    ("٤١٢", "412"),                      # Arabic-Indic digits
])
def test_normalisation(text: str, expected: str) -> None:
    assert normalise_answer(text) == expected


@pytest.mark.parametrize(("answer", "lang", "document", "found"), [
    ("the velna", "en", "The Velna is the longest river.", True),
    ("Velna, the river", "en", "velna the river", True),         # punctuation and case do not matter
    ("18300", "en", "covers about 18,300 square kilometres", True),
    ("18,300", "de", "rund 18.300 Quadratkilometer", True),
    ("412 公里", "zh", "全长412公里。", True),                      # no spaces in unsegmented scripts
    ("ヴェルナ 川", "ja", "ヴェルナ川は、ケルダ地方を流れる", True),
    ("1", "en", "It was founded in 1998.", False),               # a number is never part of a bigger number
    ("1", "en", "a score of 3.1", False),
    ("1", "en", "Chapter 1 begins here.", True),
    ("412", "en", "completed in 1412", False),
    ("412", "ja", "1412年に完成した", False),
    ("412", "ja", "全長412キロメートル", True),
    ("fc", "en", "FCs of the region", False),                    # a short answer is a whole token
    ("Velna", "de", "die Velnabrücke", True),                    # a longer one may sit inside a compound
])
def test_containment(answer: str, lang: str, document: str, found: bool) -> None:
    assert AnswerMatcher(answer, lang).found_in(match_form(document, lang)) is found


def test_an_answer_without_letters_or_digits_is_refused_naming_the_item() -> None:
    with pytest.raises(ValidationError, match="item q7: en: answer '…' has no letters or digits"):
        DistractorQuery(item_id="q7", queries={"en": "What?"}, answers={"en": "…"}, supporting=(("en", 1),), doc_langs=("en",))


def test_a_query_missing_a_document_language_is_refused_naming_the_item() -> None:
    with pytest.raises(ValidationError, match="item q8: de: no de question"):
        DistractorQuery(item_id="q8", queries={"en": "What?"}, answers={"en": "x", "de": "x"},
                        supporting=(("en", 1),), doc_langs=("en", "de"))


# --- the rules on synthetic documents -------------------------------------------------------------


def test_jaccard_of_character_5grams() -> None:
    # "abcdef" → {abcde, bcdef}; "ABCDEG" folds to "abcdeg" → {abcde, bcdeg}: 1 shared of 3.
    assert jaccard(shingles("abcdef"), shingles("ABCDEG")) == pytest.approx(1 / 3)
    assert jaccard(shingles("abc  def"), shingles("abc def")) == 1.0


def _doc(page_id: int, stamp: str | None, text: str = "Harbour news of the day.", qid: str | None = None) -> Document:
    return Document("en", page_id, f"p{page_id}", text, qid, parse_timestamp(stamp, "test"), True)


def test_temporal_rule_with_synthetic_dates() -> None:
    tides = "Tides at the harbour mouth were measured by the port office."
    support = (_doc(1, "2024-06-20T09:00:00Z", tides), _doc(2, "2024-06-15T12:00:00Z", tides.upper()))
    rules = ItemRules(support, AnswerMatcher("ferry", "en"), DistractorConfig(temporal_gap_days=14))
    forms = TextForms()
    # Earliest support 2024-06-15 12:00 UTC; 14 days before is 2024-06-01 12:00 UTC.
    assert rules.rejection(_doc(3, "2024-06-01T12:00:00Z"), forms) is None          # exactly 14 days before
    assert rules.rejection(_doc(4, "2024-06-01T12:00:00"), forms) is None           # no zone: read as UTC
    assert rules.rejection(_doc(5, "2024-06-01T12:00:01Z"), forms).startswith("temporal:")
    assert rules.rejection(_doc(6, "2024-06-18T00:00:00Z"), forms).startswith("temporal:")
    assert rules.rejection(_doc(7, "2024-06-01T14:00:00+02:00"), forms) is None     # = 12:00 UTC
    assert rules.rejection(_doc(8, None), forms) is None                            # undated: not applied
    undated = ItemRules((_doc(1, None),), AnswerMatcher("ferry", "en"), DistractorConfig(temporal_gap_days=14))
    assert undated.rejection(_doc(9, "2024-06-30T00:00:00Z"), forms) is None
    off = ItemRules(support, AnswerMatcher("ferry", "en"), DistractorConfig())
    assert off.rejection(_doc(10, "2024-06-30T00:00:00Z"), forms) is None           # the default: no rule
    assert parse_timestamp("2024-06-01", "x") == datetime(2024, 6, 1, tzinfo=timezone.utc)


def test_first_rule_that_fires_is_the_reason() -> None:
    support = (_doc(1, None, "The ferry crosses the Velna at Tarsk.", qid="Q1"),)
    rules = ItemRules(support, AnswerMatcher("ferry", "en"), DistractorConfig())
    forms = TextForms()
    assert rules.rejection(_doc(1, None, "anything"), forms).startswith("supporting:")
    assert rules.rejection(_doc(2, None, "A ferry.", qid="Q1"), forms).startswith("same_qid: Q1")
    assert rules.rejection(_doc(3, None, "The ferry crosses the Velna at Tarsk!"), forms).startswith("near_duplicate:")
    assert rules.rejection(_doc(4, None, "Ferries and bridges."), forms) is None   # "ferry" is not in "ferries"
    assert rules.rejection(_doc(5, None, "Take the Ferry."), forms).startswith("contains_answer:")


# --- fusion -------------------------------------------------------------------------------------


def test_reciprocal_rank_fusion_by_hand() -> None:
    bm25 = [(1, 10.0), (2, 8.0), (3, 5.0)]
    dense = DenseHits(top=[(3, 0.9), (1, 0.8), (4, 0.7)], cosine={1: 0.8, 2: 0.1, 3: 0.9, 4: 0.7})
    # k=60: p1 = 1/61 + 1/62 = .032523, p3 = 1/63 + 1/61 = .032266, p2 = 1/62 = .016129, p4 = 1/63 = .015873
    ranked = fuse(bm25, dense, DistractorConfig(rrf_k=60))
    assert [c.page_id for c in ranked] == [1, 3, 2, 4]
    assert [(c.bm25_score, c.dense_sim, c.difficulty) for c in ranked] == [
        (10.0, 0.8, 0.8), (5.0, 0.9, 0.9), (8.0, 0.1, 0.1), (None, 0.7, 0.7)]
    assert [c.page_id for c in fuse(bm25, dense, DistractorConfig(fusion="similarity"))] == [3, 1, 4, 2]


def test_bm25_only_difficulty_is_the_score_over_the_best() -> None:
    ranked = fuse([(7, 8.0), (5, 2.0), (9, 2.0)], None, DistractorConfig())
    assert [(c.page_id, c.rank, c.difficulty, c.dense_sim) for c in ranked] == [(7, 1, 1.0, None), (5, 2, 0.25, None), (9, 3, 0.25, None)]


# --- the stage on the sample ----------------------------------------------------------------------


def test_the_rules_reject_exactly_what_the_sample_says(bench: Bench) -> None:
    rows = _run(bench, "velna", [VELNA], DistractorConfig(per_lang=50))
    rejected = {(r["lang"], r["page_id"]): _code(r) for r in rows if r["status"] == "rejected"}
    assert rejected == {
        ("en", EN_MIRRA): "supporting", ("en", EN_LAKE_ONDRA): "supporting",
        ("en", EN_VELNA): "contains_answer", ("en", NEAR_COPY): "near_duplicate",
        ("de", DE_MIRRA): "same_qid", ("de", DE_ONDRASEE): "same_qid", ("de", DE_VELNA): "contains_answer",
        ("ja", JA_MIRRA): "same_qid", ("ja", JA_ONDRA): "same_qid", ("ja", JA_VELNA): "contains_answer",
        ("zh", ZH_MIRRA): "same_qid", ("zh", ZH_ONDRA): "same_qid", ("zh", ZH_VELNA): "contains_answer",
    }
    kept = {(r["lang"], r["page_id"]) for r in rows if r["status"] == "kept"}
    # "1412" is not the answer "412": the cathedral articles stay.
    assert {("en", EN_CATHEDRAL), ("de", DE_DOM), ("ja", JA_CATHEDRAL)} <= kept
    near = next(r for r in rows if r["page_id"] == NEAR_COPY)
    assert near["reason"].endswith(f"with the supporting document en:{EN_LAKE_ONDRA}")
    # Disambiguation pages and redirects are not even candidates.
    assert EN_VELNA_DAB not in {r["page_id"] for r in rows}
    assert {r["fingerprint"] for r in rows} == {"fp-velna"}


def test_kept_are_the_best_ranked_survivors_and_at_most_per_lang(bench: Bench) -> None:
    rows = _run(bench, "capped", [VELNA, CLUB], DistractorConfig(per_lang=3))
    supporting = {(lang, page) for query in (VELNA, CLUB) for lang, page in query.supporting}
    for item, lang in {(r["item_id"], r["lang"]) for r in rows}:
        cell = [r for r in rows if (r["item_id"], r["lang"]) == (item, lang)]
        assert [r["rank"] for r in cell] == list(range(1, len(cell) + 1))
        survivors = [r for r in cell if _code(r) in (None, "surplus")]
        assert [r["status"] for r in survivors] == ["kept"] * 3 + ["rejected"] * (len(survivors) - 3)
        assert all(r["reason"] is None for r in survivors[:3])
        assert all((lang, r["page_id"]) not in supporting for r in cell if r["status"] == "kept")
    club_kept = [r["title"] for r in rows if r["item_id"] == "mirra-club" and r["status"] == "kept"]
    assert "FC Tarsk" not in club_kept and len(club_kept) == 3


def test_difficulty_is_max_normalised_bm25_in_rank_order(bench: Bench) -> None:
    rows = [r for r in _run(bench, "bm25", [VELNA], DistractorConfig()) if r["lang"] == "en"]
    info = read_info(bench.index_paths["en"])
    expected = get_backend("tantivy").search(info, "en", [VELNA.queries["en"]], 50, info.config)[0]
    assert [(r["page_id"], r["bm25_score"]) for r in rows] == [(p, pytest.approx(s)) for p, s in expected]
    best = expected[0][1]
    assert [r["difficulty"] for r in rows] == [pytest.approx(s / best) for _, s in expected]
    assert rows[0]["difficulty"] == pytest.approx(1.0)
    assert all(r["dense_sim"] is None for r in rows)


@pytest.fixture(scope="module")
def tiny_encoder(bench: Bench, tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [text for lang in LANGS for (text,) in bench.wh.query(articles_sql("text"), [lang])]
    return build_bi_encoder(texts, tmp_path_factory.mktemp("tiny-encoder"))


def test_dense_similarity_is_the_difficulty_and_the_ranking(bench: Bench, tiny_encoder: Path) -> None:
    from sentence_transformers import SentenceTransformer

    # "Mohnzopf" is in one German article only (Tarsker Mohnzopf), so BM25 finds that one and no other.
    poppy = DistractorQuery(item_id="poppy", queries={"de": "Mohnzopf"}, answers={"de": "Karsamstag"},
                            supporting=(("de", DE_VELNA),), doc_langs=("de",))
    config = DistractorConfig(dense_model=str(tiny_encoder), fusion="similarity", per_lang=50)
    rows = _run(bench, "dense", [poppy], config)
    articles = bench.wh.query(articles_sql("page_id, title, text"), ["de"])
    # 29 German articles < candidates_k: the dense half brings every article.
    assert sorted(r["page_id"] for r in rows) == sorted(page_id for page_id, _, _ in articles)
    assert {r["page_id"] for r in rows if r["bm25_score"] is not None} == {230410}
    model = SentenceTransformer(str(tiny_encoder), device="cpu")
    question = model.encode([poppy.queries["de"]], normalize_embeddings=True)[0]
    docs = model.encode([f"{title}\n{text}" for _, title, text in articles], normalize_embeddings=True)
    cosine = {page_id: float(np.dot(question, vector)) for (page_id, _, _), vector in zip(articles, docs, strict=True)}
    assert {r["page_id"]: r["dense_sim"] for r in rows} == {p: pytest.approx(c, abs=1e-5) for p, c in cosine.items()}
    assert all(r["difficulty"] == r["dense_sim"] for r in rows)
    assert [r["page_id"] for r in rows] == sorted(cosine, key=lambda p: (-cosine[p], p))


def test_a_lent_embedder_must_be_the_configured_model(bench: Bench, tiny_encoder: Path) -> None:
    with pytest.raises(ConfigError, match="dense_model"):
        _run(bench, "x", [VELNA], DistractorConfig(dense_model="other"), embedder=DenseRanker(str(tiny_encoder), resolve(DeviceConfig())))
    with pytest.raises(ConfigError, match="no dense_model"):
        _run(bench, "x", [VELNA], DistractorConfig(), embedder=DenseRanker(str(tiny_encoder), resolve(DeviceConfig())))


def test_temporal_rule_on_the_sample_dates(bench: Bench) -> None:
    late = DistractorQuery(  # Orvik Opera House (2026-10-31T12:27:12Z) and Velna Railway (2026-10-22T14:25:17Z)
        item_id="late", queries={"en": "Which railway along the Velna reaches the Orvik opera house?"},
        answers={"en": "the harbour line"}, supporting=(("en", 41170), ("en", 41300)), doc_langs=("en",))
    rows = _run(bench, "temporal", [late], DistractorConfig(per_lang=50, temporal_gap_days=14))
    cutoff = "2026-10-08T14:25:17Z"  # the earlier supporting date minus 14 days
    stamps = dict(bench.wh.query("SELECT page_id, timestamp FROM documents WHERE lang = 'en' AND page_id IS NOT NULL"))
    candidates = [r for r in rows if _code(r) != "supporting"]
    assert candidates
    for row in candidates:
        stamp = stamps[row["page_id"]]
        assert (_code(row) == "temporal") == (stamp is not None and stamp > cutoff), row
    assert not any(r["page_id"] == NEAR_COPY and r["status"] == "rejected" for r in rows)  # undated: no rule


# The rules' survivors for VELNA in English, in BM25 order (k1 1.2, b 0.3), with what the stand-in judge
# below says of each: Kelda Mountains names Mount Aska (answers), The Salt Queen, Tarsk and FC Tarsk name
# Orvik (undecided), the others neither (does not answer).
SURVIVORS = [41040, 41180, 41120, 41340, 41050, 41080, 41220, 41110]
CHECKED = {
    # Round 1 asks about the first 4 and keeps 3; round 2 asks about Tarsk and keeps it, unverified.
    True: {41040: ("rejected", "answers_question"), 41180: ("kept", "unverified"), 41120: ("kept", None),
           41340: ("kept", None), 41050: ("kept", "unverified")},
    # Undecided candidates are not used: round 1 keeps 2, round 2 asks about Tarsk and Velna Bridge and keeps
    # one, round 3 about FC Tarsk (undecided), round 4 about Velnite.
    False: {41040: ("rejected", "answers_question"), 41180: ("rejected", "unverified"), 41120: ("kept", None),
            41340: ("kept", None), 41050: ("rejected", "unverified"), 41080: ("kept", None),
            41220: ("rejected", "unverified"), 41110: ("kept", None)},
}


@pytest.mark.parametrize("use_unverified", [False, True])
def test_the_answer_check_hook_sees_only_survivors_and_rejects_on_true(bench: Bench, use_unverified: bool) -> None:
    asked: list[tuple[str, str, str]] = []

    def check(pairs: list[tuple[str, str, str]]) -> list[bool | None]:
        """A stand-in judge: Kelda Mountains (it names Mount Aska) answers; anything naming Orvik is undecided."""
        asked.extend(pairs)
        return [True if "Aska" in text else None if "Orvik" in text else False for _, text, _ in pairs]

    config = DistractorConfig(per_lang=4, use_unverified_distractors=use_unverified)
    rows = _run(bench, f"checked-{use_unverified}", [VELNA], config, answer_check=check)
    en = [r for r in rows if r["lang"] == "en"]
    texts = dict(bench.wh.query("SELECT page_id, text FROM documents WHERE lang = 'en' AND page_id IS NOT NULL"))
    asked_en = [text for question, text, lang in asked if question == VELNA.queries["en"] and lang == "en"]
    assert asked_en == [texts[page] for page in SURVIVORS[: len(CHECKED[use_unverified])]]  # in rank order
    checked = {r["page_id"]: (r["status"], _code(r)) for r in en if texts[r["page_id"]] in asked_en}
    assert checked == CHECKED[use_unverified]
    assert sum(r["status"] == "kept" for r in en) == 4
    # Nothing a rule rejected was asked about, and nothing was kept unasked.
    assert {_code(r) for r in en if r["page_id"] not in checked} <= {"supporting", "contains_answer", "near_duplicate",
                                                                     "surplus"}


def test_a_model_as_the_answer_check_rejects_what_it_says_answers_and_leaves_the_undecided_out(
    bench: Bench, server: FakeLLMServer,
) -> None:
    texts = dict(bench.wh.query("SELECT page_id, text FROM documents WHERE lang = 'en' AND page_id IS NOT NULL"))
    chat_replies.install(server)  # a sentence, then "<answers>no</answers>", unless said otherwise below
    # Kelda Mountains: a model that repeats the prompt, whose worked example says no, and then says yes
    server.answer(texts[41040][:60], echoing(chat_replies.distractor_check("yes")))
    server.script(texts[41050][:60], Fault.with_status(400, "refused"))  # Tarsk: a permanent error, no verdict
    config = DistractorConfig(per_lang=4, answer_checker="fake")
    check = llm_answer_check(fake_client(bench.wh, server), "fake", config)
    en = {r["page_id"]: r for r in _run(bench, "model-checked", [VELNA], config, answer_check=check) if r["lang"] == "en"}
    assert (en[41040]["status"], _code(en[41040])) == ("rejected", "answers_question")
    assert (en[41050]["status"], _code(en[41050])) == ("rejected", "unverified")  # not used: it may answer
    assert (en[41180]["status"], _code(en[41180])) == ("kept", None)
    assert sum(r["status"] == "kept" for r in en.values()) == 4
    prompts = [prompt_of(call.body) for call in server.calls]
    assert all(VELNA.queries[lang] in "".join(prompts) for lang in LANGS)  # each language asked in its own words


def test_a_redirect_or_disambiguation_page_in_an_index_is_rejected(bench: Bench, tmp_path: Path) -> None:
    # An index over every page with an id, disambiguation pages included (not what the index stage builds).
    rows = bench.wh.query("SELECT page_id, title, text FROM documents WHERE lang = 'en' AND page_id IS NOT NULL ORDER BY page_id")
    path = tmp_path / "all-en"
    get_backend("tantivy").build("en", rows, path, IndexConfig())
    result = _run(bench, "dab", [VELNA.model_copy(update={"doc_langs": ("en",)})], DistractorConfig(per_lang=50),
                  index_paths={"en": path})
    dab = [r for r in result if r["page_id"] == EN_VELNA_DAB]
    assert [(r["status"], _code(r)) for r in dab] == [("rejected", "not_article")]


def test_a_rerun_replaces_only_its_own_benchmark(bench: Bench) -> None:
    first = _run(bench, "rerun", [VELNA, CLUB], DistractorConfig(per_lang=2))
    other = _run(bench, "other", [CLUB], DistractorConfig(per_lang=2))
    second = _run(bench, "rerun", [CLUB], DistractorConfig(per_lang=5))
    assert {r["item_id"] for r in first} == {"velna-length", "mirra-club"}
    assert {r["item_id"] for r in second} == {"mirra-club"}
    assert sum(r["status"] == "kept" for r in second) == 5
    assert bench.wh.query_dicts("SELECT * FROM distractors WHERE benchmark = 'other' ORDER BY item_id, lang, rank") == other


def test_bad_input_names_the_item_or_the_language(bench: Bench) -> None:
    missing_doc = DistractorQuery(item_id="ghost", queries={"en": "Where?"}, answers={"en": "Tarsk"},
                                  supporting=(("en", 99999999),), doc_langs=("en",))
    with pytest.raises(ConfigError, match=r"item ghost: supporting document\(s\) en:99999999"):
        _run(bench, "bad", [missing_doc], DistractorConfig())
    with pytest.raises(ConfigError, match="no BM25 index given for ja, zh"):
        _run(bench, "bad", [VELNA], DistractorConfig(), index_paths={"en": bench.index_paths["en"], "de": bench.index_paths["de"]})
    with pytest.raises(ConfigError, match="given more than once: mirra-club"):
        _run(bench, "bad", [CLUB, CLUB], DistractorConfig())
    assert bench.wh.scalar("SELECT count(*) FROM distractors WHERE benchmark = 'bad'") == 0
