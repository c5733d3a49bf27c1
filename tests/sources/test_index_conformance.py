"""One behaviour suite for every index backend: tantivy always, Elasticsearch when a cluster is configured.

Corpora are a few hand-written documents per test, so every expected ranking
and the exact BM25 scores below can be worked out on paper.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.errors import ConfigError, InputFormatError
from tasks.index.base import IndexConfig, IndexInfo, SearchIndex, manifest_path
from tasks.index.registry import get_backend

ES_URL_ENV = "BABELBENCH_ES_URL"
BACKENDS = [
    "tantivy",
    pytest.param(
        "elasticsearch",
        marks=pytest.mark.skipif(not os.environ.get(ES_URL_ENV), reason=f"no Elasticsearch cluster: set {ES_URL_ENV} to run"),
    ),
]
STEMMED = IndexConfig()
UNSTEMMED = IndexConfig(stem=False)


class Harness:
    """A backend plus the indexes a test built with it, dropped at the end (they live on a cluster for ES)."""

    def __init__(self, backend: SearchIndex, root: Path) -> None:
        self.backend = backend
        self.root = root
        self.built: list[Path] = []

    def build(self, lang: str, docs: list[tuple[int, str, str]], config: IndexConfig = STEMMED, name: str | None = None) -> IndexInfo:
        path = self.root / (name or f"{lang}-index")
        info = self.backend.build(lang, docs, path, config)
        if path not in self.built:
            self.built.append(path)
        return info

    def ids(self, info: IndexInfo, query: str, k: int = 10, config: IndexConfig = STEMMED) -> list[int]:
        [hits] = self.backend.search(info, info.lang, [query], k, config)
        return [doc_id for doc_id, _ in hits]


@pytest.fixture(params=BACKENDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    options = {"index_prefix": "babelbench-test"} if request.param == "elasticsearch" else {}
    harness = Harness(get_backend(request.param, **options), tmp_path)
    yield harness
    for path in harness.built:
        if path.exists():
            harness.backend.drop(path)


ENGLISH = [
    (10, "Solar eclipse", "A solar eclipse happens when the Moon passes between the Sun and Earth."),
    (11, "Lunar eclipse", "A lunar eclipse happens when Earth passes between the Sun and the Moon."),
    (12, "Sun", "The Sun is the star at the centre of the Solar System; an eclipse can hide it."),
    (13, "Eclipse (software)", "Eclipse is an integrated development environment."),
    (14, "C++ (language)", "C++ is a programming language with classes and templates."),
]
GERMAN = [
    (20, "Berlin", "Berlin ist die Hauptstadt von Deutschland."),
    (21, "Hauptstadt", "Eine Hauptstadt ist der Sitz der Regierung, wie Berlin oder Paris."),
    (22, "Deutschland", "Deutschland liegt in Mitteleuropa; die Hauptstadt ist Berlin."),
    (23, "Architektur", "Die Häuser der Altstadt sind alt."),
]
JAPANESE = [
    (30, "東京", "東京は日本の首都である。"),
    (31, "京都", "京都は日本の古都で、東京から新幹線で行ける。"),
    (32, "日本", "日本は東アジアの島国である。首都は東京。"),
]
CHINESE = [
    (40, "北京", "北京是中国的首都。"),
    (41, "上海", "上海是中国最大的城市，离北京很远。"),
    (42, "中国", "中国的首都是北京。"),
    (43, "广场", "我爱北京天安门"),
]


@pytest.mark.parametrize(
    ("lang", "docs", "title", "expected"),
    [
        ("en", ENGLISH, "Solar eclipse", 10),
        ("en", ENGLISH, "Eclipse (software)", 13),
        ("de", GERMAN, "Hauptstadt", 21),
        ("de", GERMAN, "Berlin", 20),
        ("ja", JAPANESE, "東京", 30),
        ("zh", CHINESE, "北京", 40),
    ],
)
def test_the_article_titled_like_the_query_ranks_first(
    harness: Harness, lang: str, docs: list[tuple[int, str, str]], title: str, expected: int
) -> None:
    info = harness.build(lang, docs)
    assert info.doc_count == len(docs) and info.lang == lang and info.backend == harness.backend.name
    assert harness.ids(info, title)[0] == expected


def test_a_title_match_outweighs_the_same_match_in_the_body_by_the_boost(harness: Harness) -> None:
    # Both fields have one word per title and three per body in every document, so a
    # one-word match scores the same per field; only the boost tells them apart.
    info = harness.build("en", [(50, "Quartz", "A hard mineral."), (51, "Mineral", "Quartz is hard.")], UNSTEMMED)
    for boost in (2.0, 3.0):
        [hits] = harness.backend.search(info, "en", ["quartz"], 10, UNSTEMMED.model_copy(update={"title_boost": boost}))
        (first, title_score), (second, body_score) = hits
        assert (first, second) == (50, 51)
        assert title_score == pytest.approx(boost * body_score, rel=1e-5)


def test_k_caps_the_hits_and_small_collections_return_all_matches(harness: Harness) -> None:
    docs = [(60 + i, f"Entry {i}", f"common word number {i}") for i in range(5)] + [(70, "Other", "unrelated text")]
    info = harness.build("en", docs)
    assert len(harness.ids(info, "common", k=3)) == 3
    assert sorted(harness.ids(info, "common", k=10)) == [60, 61, 62, 63, 64]
    with pytest.raises(ConfigError, match="k must be"):
        harness.backend.search(info, "en", ["common"], 0, STEMMED)


def test_equal_scores_come_out_by_doc_id_even_at_the_cut(harness: Harness) -> None:
    twins = [(doc_id, "Twin", "identical twin text") for doc_id in (30, 10, 40, 20)]
    info = harness.build("en", [*twins, (50, "Other", "something else")])
    [hits] = harness.backend.search(info, "en", ["identical"], 10, STEMMED)
    assert [doc_id for doc_id, _ in hits] == [10, 20, 30, 40]
    assert len({score for _, score in hits}) == 1
    assert harness.ids(info, "identical", k=2) == [10, 20]
    assert harness.ids(info, "identical", k=3) == [10, 20, 30]


def test_hits_are_sorted_by_score_then_doc_id(harness: Harness) -> None:
    info = harness.build("en", ENGLISH)
    [hits] = harness.backend.search(info, "en", ["the sun and the moon eclipse"], 10, STEMMED)
    assert len(hits) >= 4
    assert hits == sorted(hits, key=lambda hit: (-hit[1], hit[0]))


def test_shorter_document_with_the_same_term_count_ranks_higher(harness: Harness) -> None:
    docs = [
        (61, "Two", "zebra lives in the grassland of africa"),
        (60, "One", "zebra stripes"),
        (62, "Three", "lions hunt at night"),
    ]
    info = harness.build("en", docs)
    assert harness.ids(info, "zebra") == [60, 61]


@pytest.mark.parametrize(
    ("lang", "docs", "query", "expected"),
    [
        ("en", [(70, "Marathon", "She runs every morning."), (71, "Chess", "A board game for two players.")], "running", [70]),
        ("de", GERMAN, "Haus", [23]),
    ],
)
def test_stemming_matches_other_forms_only_when_enabled(
    harness: Harness, lang: str, docs: list[tuple[int, str, str]], query: str, expected: list[int]
) -> None:
    stemmed = harness.build(lang, docs, STEMMED, name="stemmed")
    plain = harness.build(lang, docs, UNSTEMMED, name="plain")
    assert harness.ids(stemmed, query) == expected
    assert harness.ids(plain, query, config=UNSTEMMED) == []


def test_words_are_found_inside_unsegmented_chinese_and_japanese(harness: Harness) -> None:
    chinese = harness.build("zh", CHINESE)
    assert harness.ids(chinese, "天安门") == [43]
    assert sorted(harness.ids(chinese, "首都")) == [40, 42]
    japanese = harness.build("ja", JAPANESE)
    assert sorted(harness.ids(japanese, "首都")) == [30, 32]
    assert 31 in harness.ids(japanese, "新幹線")


def test_query_syntax_characters_are_plain_text(harness: Harness) -> None:
    info = harness.build("en", ENGLISH, UNSTEMMED)
    awkward = [
        '"', "*", "AND", "OR", "NOT", "title:foo", "-x", "(", ")", "[1 TO 5]", "{", "}",
        "~", "^2", "\\", "/", "!", "?", ":", "&&", "||", "'",
    ]
    results = harness.backend.search(info, "en", ["C++ (language)", *awkward], 10, UNSTEMMED)
    assert results[0][0][0] == 14
    by_query = dict(zip(awkward, results[1:], strict=False))
    assert by_query['"'] == by_query["*"] == by_query["\\"] == []
    # "AND" is the word "and", which documents 10, 11 and 14 contain; not an operator.
    assert sorted(doc_id for doc_id, _ in by_query["AND"]) == [10, 11, 14]
    assert [doc_id for doc_id, _ in by_query["title:foo"]] == []


@pytest.mark.parametrize("query", ["", "   ", "?!", "。"])
def test_a_query_without_words_returns_no_hits(harness: Harness, query: str) -> None:
    info = harness.build("en", ENGLISH)
    assert harness.backend.search(info, "en", [query], 10, STEMMED) == [[]]


# Both backends score with Lucene's BM25 at the config's k1 and b: Lucene 8+ (so Elasticsearch)
# has no classic (k1 + 1) factor, which only scales every score of a query alike. Field lengths
# here stay under 40 words, which Lucene's one-byte length encoding keeps exact, so the hand
# computation is exact for both; what remains is float32 arithmetic: the embedded backend's
# precomputed scores (rel 1e-6), Lucene's scorer (rel 1e-5).
TUNED = IndexConfig(k1=0.9, b=0.3, stem=False)
REL = {"tantivy": 1e-6, "elasticsearch": 1e-5}


def lucene_bm25(tf: int, dl: int, avgdl: float, n: int, N: int, config: IndexConfig) -> float:  # noqa: N803 - N as in the formula
    """One word's score in one field: tf occurrences in a field of dl words; n of the field's N documents have it."""
    idf = math.log(1 + (N - n + 0.5) / (n + 0.5))
    return idf * tf / (tf + config.k1 * (1 - config.b + config.b * dl / avgdl))


def test_scores_are_lucene_bm25_at_the_configured_k1_and_b(harness: Harness) -> None:
    docs = [
        (1, "Orchard", "apple apple pear plum fig kiwi lime lemon mango grape melon quince"),
        (2, "Apple pie", "apple crust"),
        (3, "Berry", "cherry berry cream jam"),
    ]
    info = harness.build("en", docs, TUNED)
    assert (info.bm25_k1, info.bm25_b) == (0.9, 0.3)
    [hits] = harness.backend.search(info, "en", ["apple berry"], 10, TUNED)
    boost = TUNED.title_boost
    # Titles: 1 + 2 + 1 words, mean 4/3; "apple" in 1 title (doc 2), "berry" in 1 (doc 3).
    # Bodies: 12 + 2 + 4 words, mean 6; "apple" in 2 bodies (twice in doc 1), "berry" in 1 (doc 3).
    expected = {
        1: lucene_bm25(2, 12, 6, 2, 3, TUNED),
        2: boost * lucene_bm25(1, 2, 4 / 3, 1, 3, TUNED) + lucene_bm25(1, 2, 6, 2, 3, TUNED),
        3: boost * lucene_bm25(1, 1, 4 / 3, 1, 3, TUNED) + lucene_bm25(1, 4, 6, 1, 3, TUNED),
    }
    assert [doc_id for doc_id, _ in hits] == [3, 2, 1]
    for doc_id, score in hits:
        assert score == pytest.approx(expected[doc_id], rel=REL[harness.backend.name])
    # Worked by hand for k1 = 0.9, b = 0.3: idf = ln(8/3) or ln(1.6); 1.61238, 1.23722, 0.29653.
    assert [score for _, score in hits] == pytest.approx([1.61238, 1.23722, 0.29653], abs=1e-5)


def test_b_weighs_document_length_as_the_formula_says(harness: Harness) -> None:
    docs = [
        (1, "Long", "apple apple pear plum fig kiwi lime lemon mango grape melon quince"),
        (2, "Short", "apple fig"),
        (3, "Other", "kiwi lime lemon mango"),
    ]
    # "apple": twice in the 12-word body, once in the 2-word one; bodies 12 + 2 + 4 words, mean 6.
    # Worked by hand for k1 = 0.9: ln(1.6) · 2 / (2 + 0.9 · (1 - b + 2b)) and ln(1.6) · 1 / (1 + 0.9 · (1 - b + b/3)).
    by_hand = {0.3: {1: 0.29653, 2: 0.27326}, 0.75: {1: 0.26294, 2: 0.32414}}
    for b, ranking in ((0.3, [1, 2]), (0.75, [2, 1])):
        config = TUNED.model_copy(update={"b": b})
        info = harness.build("en", docs, config, name=f"b-{b}")
        [hits] = harness.backend.search(info, "en", ["apple"], 10, config)
        assert [doc_id for doc_id, _ in hits] == ranking
        expected = {1: lucene_bm25(2, 12, 6, 2, 3, config), 2: lucene_bm25(1, 2, 6, 2, 3, config)}
        assert dict(hits) == pytest.approx(expected, rel=REL[harness.backend.name])
        assert dict(hits) == pytest.approx(by_hand[b], abs=1e-5)


def test_field_statistics_count_only_documents_with_words_in_the_field(harness: Harness) -> None:
    # Lucene's N and mean length of a field (its docCount) leave out documents whose field is empty.
    docs = [(1, "Kiwi", ""), (2, "Lime", "kiwi fig"), (3, "Fig", "lemon kiwi kiwi date")]
    info = harness.build("en", docs, TUNED)
    [hits] = harness.backend.search(info, "en", ["kiwi"], 10, TUNED)
    # Titles: three of one word, "kiwi" in one. Bodies: two (2 and 4 words, mean 3), "kiwi" in both.
    expected = {
        1: TUNED.title_boost * lucene_bm25(1, 1, 1, 1, 3, TUNED),
        2: lucene_bm25(1, 2, 3, 2, 2, TUNED),
        3: lucene_bm25(2, 4, 3, 2, 2, TUNED),
    }
    assert dict(hits) == pytest.approx(expected, rel=REL[harness.backend.name])
    # By hand: body idf = ln(1 + 0.5/2.5) = ln 1.2 (it would be ln 1.6 with the empty body counted).
    assert dict(hits) == pytest.approx({1: 1.03245, 2: 0.10073, 3: 0.12195}, abs=1e-5)


def test_an_index_whose_scores_do_not_follow_its_config_is_refused(harness: Harness) -> None:
    # What an index built when the embedded backend ignored k1/b records in its manifest.
    info = harness.build("en", ENGLISH, UNSTEMMED)
    manifest_path(info.path).write_text(info.model_copy(update={"bm25_b": 0.75}).model_dump_json())
    with pytest.raises(ConfigError, match="b=0.75, not its config's k1=1.2, b=0.3; rebuild"):
        harness.backend.search(info.path, "en", ["sun"], 10, UNSTEMMED)


def _entries(folder: Path) -> set[str]:
    return {entry.name for entry in folder.iterdir()}


def test_a_rebuild_replaces_the_index_and_leaves_nothing_behind(harness: Harness) -> None:
    first = harness.build("en", [(1, "Old", "ancient relic")])
    after_first = _entries(harness.root)
    second = harness.build("en", [(2, "New", "modern gadget"), (3, "Newer", "modern phone")])
    assert second.path == first.path and second.doc_count == 2
    assert harness.ids(second, "relic") == []
    assert sorted(harness.ids(second, "modern")) == [2, 3]
    assert len(_entries(harness.root)) == len(after_first)
    assert not any(name.endswith((".tmp", ".link")) for name in _entries(harness.root))


def test_a_build_that_fails_keeps_the_old_index(harness: Harness) -> None:
    info = harness.build("en", [(1, "Old", "ancient relic")])
    before = _entries(harness.root)
    with pytest.raises(InputFormatError, match="row 1"):
        harness.build("en", [(2, "New", "modern gadget"), ("three", "Bad", "the id is not an integer")])
    assert _entries(harness.root) == before
    assert harness.ids(info, "relic") == [1]


def test_search_refuses_another_language_or_analysis(harness: Harness) -> None:
    info = harness.build("en", ENGLISH)
    with pytest.raises(ConfigError, match="'en'"):
        harness.backend.search(info, "de", ["Sonne"], 10, STEMMED)
    with pytest.raises(ConfigError, match="rebuild"):
        harness.backend.search(info, "en", ["sun"], 10, UNSTEMMED)
    # the path alone finds the manifest; the query-time boost may differ from the build's
    [hits] = harness.backend.search(info.path, "en", ["eclipse"], 10, STEMMED.model_copy(update={"title_boost": 1.0}))
    assert {doc_id for doc_id, _ in hits} == {10, 11, 12, 13}


def test_unknown_language_is_refused_before_building(harness: Harness) -> None:
    with pytest.raises(ConfigError, match="unknown language code 'xx'"):
        harness.build("xx", [(1, "t", "x")])
    assert _entries(harness.root) == set()


def test_drop_removes_the_index(harness: Harness) -> None:
    info = harness.build("en", ENGLISH)
    harness.backend.drop(info.path)
    assert _entries(harness.root) == set()
    with pytest.raises(ConfigError, match="no index"):
        harness.backend.search(info.path, "en", ["sun"], 10, STEMMED)


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="known: elasticsearch, tantivy"):
        get_backend("lucene")


def test_elasticsearch_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ES_URL_ENV, raising=False)
    with pytest.raises(ConfigError, match=ES_URL_ENV):
        get_backend("elasticsearch")


def test_the_embedded_backend_does_not_import_the_elasticsearch_client() -> None:
    code = "import sys; from tasks.index import get_backend; get_backend('tantivy'); print('elasticsearch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# Rebuilds publish atomically. Elasticsearch: a rebuild writes a new concrete index and moves the
# reference's alias to it in one update_aliases request. Embedded: a new hidden folder, and the
# path's symlink switched to it with one rename. Either way a search sees the old index or the
# new one, and what a killed build left is deleted by the next build of the same path.


def _serving(harness: Harness, info: IndexInfo) -> set[str]:
    """The concrete index(es) that searches of the reference at ``info.path`` read."""
    if harness.backend.name == "elasticsearch":
        return set(harness.backend.aliased(str(info.index_name)))  # type: ignore[attr-defined]
    return {os.readlink(info.path)}


def _built(harness: Harness, info: IndexInfo) -> set[str]:
    """Every concrete index stored for the reference at ``info.path``, serving or not."""
    if harness.backend.name == "elasticsearch":
        return set(harness.backend.builds(str(info.index_name)))  # type: ignore[attr-defined]
    prefix = f".{info.path.name}."
    return {entry.name for entry in harness.root.iterdir() if entry.name.startswith(prefix) and not entry.is_symlink()}


def test_a_rebuild_points_the_reference_at_exactly_one_new_index_and_deletes_the_old(harness: Harness) -> None:
    first = harness.build("en", [(1, "Old", "ancient relic")])
    [old] = _serving(harness, first)
    assert _built(harness, first) == {old}
    second = harness.build("en", [(2, "New", "modern gadget"), (3, "Newer", "modern phone")])
    [new] = _serving(harness, second)
    assert new != old
    assert _built(harness, second) == {new}  # the old index is gone
    assert harness.ids(first, "relic") == [] and sorted(harness.ids(first, "modern")) == [2, 3]
    if harness.backend.name == "elasticsearch":
        # searches go through the alias, which the manifest names; the concrete index is named from it
        alias = harness.backend.alias_for("en", second.path)  # type: ignore[attr-defined]
        assert first.index_name == second.index_name == alias
        assert new.startswith(f"{alias}--") and old.startswith(f"{alias}--")


def test_searches_during_a_rebuild_read_the_old_index_until_the_new_one_is_published(harness: Harness) -> None:
    first = harness.build("en", [(1, "Old", "ancient relic")])
    seen: list[list[int]] = []

    def docs() -> Iterator[tuple[int, str, str]]:
        yield (2, "New", "modern relic")
        seen.append(harness.ids(first, "relic"))  # the new index exists, half built, behind the reference
        yield (3, "Newer", "modern relic relic")

    harness.backend.build("en", docs(), first.path, STEMMED)  # a generator: the search runs mid-build
    assert seen == [[1]]
    assert harness.ids(first, "relic") == [3, 2]


def test_a_reader_opened_before_the_swap_keeps_working(tmp_path: Path) -> None:
    # The embedded equivalent of an in-flight search on the old Elasticsearch index: the opened
    # (memory-mapped) index stays readable after the rebuild deleted its folder.
    from tasks.index import embedded

    backend = get_backend("tantivy")
    path = tmp_path / "en-index"
    backend.build("en", [(1, "Old", "ancient relic")], path, STEMMED)
    opened = embedded._open(path.resolve())
    backend.build("en", [(2, "New", "modern relic")], path, STEMMED)
    assert [doc_id for doc_id, _ in opened.top_k([["relic"]], {"title": 2.0, "body": 1.0}, 10)[0]] == [1]
    [hits] = backend.search(path, "en", ["relic"], 10, STEMMED)
    assert [doc_id for doc_id, _ in hits] == [2]


KILLED_BUILD = """
import json, sys, time
from pathlib import Path
from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend

def docs():
    yield (9, "Doomed", "never published")
    print("building", flush=True)
    time.sleep(600)

get_backend(sys.argv[1], **json.loads(sys.argv[3])).build("en", docs(), Path(sys.argv[2]), IndexConfig())
"""


def test_a_half_built_index_left_by_a_killed_build_is_deleted_by_the_next_build(harness: Harness) -> None:
    first = harness.build("en", [(1, "Old", "ancient relic")])
    [old] = _serving(harness, first)
    options = {"index_prefix": "babelbench-test"} if harness.backend.name == "elasticsearch" else {}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_BUILD, harness.backend.name, str(first.path), json.dumps(options)],
        cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.strip() == "building", child.stderr.read() if child.stderr else ""
    finally:
        child.kill()  # SIGKILL: no cleanup runs
        child.communicate()
    leftovers = _built(harness, first) - {old}
    assert len(leftovers) == 1 and _serving(harness, first) == {old}
    assert harness.ids(first, "relic") == [1]  # the half-built index is not searched
    second = harness.build("en", [(2, "New", "modern gadget")])
    [new] = _serving(harness, second)
    assert _built(harness, second) == {new} and new not in leftovers | {old}
    assert harness.ids(second, "gadget") == [2] and harness.ids(second, "never") == []
