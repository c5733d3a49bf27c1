"""Per-language analysis of the index stage, checked row by row against the language rules.

The expected tables are written out by hand from ``tasks/text/languages.csv``
and from what each engine ships (tantivy 0.27's stemmers, Elasticsearch's
built-in analyzers), not computed by the code under test.
"""

from __future__ import annotations

import pytest
import tantivy

from tasks.errors import ConfigError
from tasks.index.analysis import (
    ES_PRESEGMENTED_ANALYZER,
    TANTIVY_STEMMERS,
    plan_for,
    prepare_document,
    prepare_query,
)
from tasks.index.base import IndexConfig
from tasks.index.elastic import index_mappings, index_settings, public_url, search_body
from tasks.index.embedded import text_analyzer
from tasks.text.languages import all_rules

# Written out by hand for languages of every kind: unspaced scripts (segmented in Python), languages whose Snowball
# stemmer tantivy has (engine stems), whose stemmer tantivy lacks (stemmed in Python: hi, id, hy, ne), and with
# no Snowball stemmer at all (bn, uk, he, ko, sw).
SEGMENTED = {"zh", "ja", "th", "km", "lo", "my"}
PYTHON_STEMMED = {"hi": "hindi", "id": "indonesian", "hy": "armenian", "ne": "nepali"}
# lang -> tantivy stemmer with stem=True (None: no Snowball stemmer, tantivy lacks it, or the text is pre-segmented)
TANTIVY_STEMMER = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese",
    "ru": "russian", "el": "greek", "ar": "arabic", "fi": "finnish", "ta": "tamil",
    "uk": None, "bn": None, "he": None, "ko": None, "sw": None, "ka": None,
} | dict.fromkeys(SEGMENTED | set(PYTHON_STEMMED))
# lang -> Elasticsearch analyzer with stem=True (no built-in analyzer: "standard")
ES_ANALYZER = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese",
    "ru": "russian", "el": "greek", "ar": "arabic", "fi": "finnish", "bn": "bengali",
    "uk": "standard", "he": "standard", "ko": "standard", "sw": "standard", "ka": "standard", "ta": "standard",
} | dict.fromkeys(SEGMENTED | set(PYTHON_STEMMED), ES_PRESEGMENTED_ANALYZER)
WORD_REGEX = {"bn", "ta"}  # Bengali and Tamil words contain a virama or vowel signs


@pytest.mark.parametrize("lang", sorted(TANTIVY_STEMMER))
def test_plan_of_languages_of_every_kind(lang: str) -> None:
    plan = plan_for(lang, stem=True)
    presegmented = lang in SEGMENTED or lang in PYTHON_STEMMED
    assert plan.presegment == presegmented
    assert plan.python_stemmer == PYTHON_STEMMED.get(lang)
    assert plan.tantivy_stemmer == TANTIVY_STEMMER[lang]
    assert plan.es_analyzer == ES_ANALYZER[lang]
    expected_tokenizer = "whitespace" if presegmented else "word_regex" if lang in WORD_REGEX else "simple"
    assert plan.tantivy_tokenizer == expected_tokenizer


@pytest.mark.parametrize("lang", sorted(TANTIVY_STEMMER))
def test_without_stemming_nothing_stems(lang: str) -> None:
    plan = plan_for(lang, stem=False)
    assert plan.tantivy_stemmer is None and plan.python_stemmer is None
    assert plan.es_analyzer == (ES_PRESEGMENTED_ANALYZER if lang in SEGMENTED else "standard")
    assert plan.presegment == (lang in SEGMENTED)


def test_every_language_with_a_snowball_stemmer_is_stemmed_by_one_engine_or_in_python() -> None:
    for lang, rule in all_rules().items():
        plan = plan_for(lang, stem=True)
        if rule.stemmer:
            assert (plan.tantivy_stemmer or plan.python_stemmer) == rule.stemmer, lang
        else:
            assert plan.tantivy_stemmer is None and plan.python_stemmer is None, lang


def test_python_stemming_lowercases_and_stems_the_words_both_engines_then_read() -> None:
    # Snowball's Indonesian stemmer removes the prefix me-/mem- and the suffixes -kan, -nya
    assert prepare_query("Mahasiswa MEMBACAKAN buku-bukunya", plan_for("id", stem=True)) == "mahasiswa baca buku buku"
    assert prepare_query("Mahasiswa MEMBACAKAN", plan_for("id", stem=False)) == "Mahasiswa MEMBACAKAN"


def test_unknown_language_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="xx"):
        plan_for("xx", stem=True)


def _builds(stemmer: str) -> bool:
    try:
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.stemmer(stemmer)).build()
    except ValueError:
        return False
    return True


def test_the_stemmer_table_matches_the_installed_tantivy() -> None:
    assert all(_builds(name) for name in TANTIVY_STEMMERS)
    assert not _builds("hindi") and not _builds("indonesian")


def test_tantivy_analyzers_cut_words_as_each_script_needs() -> None:
    assert text_analyzer(plan_for("en", stem=True)).analyze("Running RUNS, ran.") == ["run", "run", "ran"]
    assert text_analyzer(plan_for("en", stem=False)).analyze("Running RUNS, ran.") == ["running", "runs", "ran"]
    assert text_analyzer(plan_for("de", stem=True)).analyze("Häuser des Hauses") == ["haus", "des", "haus"]
    # The virama (U+094D) stays inside the word; tantivy's simple tokenizer would split "हिन्दी" in two.
    assert text_analyzer(plan_for("hi", stem=False)).analyze("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert text_analyzer(plan_for("zh", stem=True)).analyze("我 爱 Beijing") == ["我", "爱", "beijing"]


def test_prepared_documents_cut_the_body_only_and_segment_unspaced_scripts() -> None:
    long_body = " ".join(f"w{i}" for i in range(250))
    title, body = prepare_document("A long title " * 30, long_body, plan_for("en", stem=True), truncate_body=True)
    assert body.split() == [f"w{i}" for i in range(200)]
    assert title == "A long title " * 30
    _, whole = prepare_document("t", long_body, plan_for("en", stem=True), truncate_body=False)
    assert whole == long_body
    assert prepare_document("北京", "我爱北京天安门。", plan_for("zh", stem=True), truncate_body=True) == ("北京", "我 爱 北京 天安门")
    _, cut = prepare_document("t", "字" * 700, plan_for("zh", stem=True), truncate_body=True)
    assert len(cut.replace(" ", "")) == 600
    assert prepare_query("東京都に住んでいます", plan_for("ja", stem=True)).split()[:3] == ["東京", "都", "に"]
    assert prepare_query("C++ (language)", plan_for("en", stem=True)) == "C++ (language)"


def test_elasticsearch_index_body_carries_bm25_parameters_and_analyzers() -> None:
    config = IndexConfig(k1=0.9, b=0.4)
    settings = index_settings(config, shards=1, replicas=0)
    similarity = next(iter(settings["similarity"].values()))
    assert similarity == {"type": "BM25", "k1": 0.9, "b": 0.4}
    custom = settings["analysis"]["analyzer"][ES_PRESEGMENTED_ANALYZER]
    assert (custom["tokenizer"], custom["filter"]) == ("whitespace", ["lowercase"])
    for lang, analyzer in [("de", "german"), ("ja", ES_PRESEGMENTED_ANALYZER)]:
        fields = index_mappings(plan_for(lang, stem=True))["properties"]
        assert fields["title"]["analyzer"] == fields["body"]["analyzer"] == analyzer
        assert fields["title"]["similarity"] == fields["body"]["similarity"] in settings["similarity"]
        assert fields["doc_id"]["type"] == "long"


def test_elasticsearch_query_sums_fields_and_breaks_ties_by_doc_id() -> None:
    body = search_body("C++ (language)", 100, 2.0)
    match = body["query"]["multi_match"]
    assert match["query"] == "C++ (language)"  # a match query analyses text; it has no query syntax
    assert match["fields"] == ["title^2.0", "body"] and match["type"] == "most_fields"
    assert body["size"] == 100
    assert body["sort"] == [{"_score": "desc"}, {"doc_id": "asc"}]


def test_recorded_cluster_urls_drop_credentials() -> None:
    assert public_url("https://elastic:s3cret@search.example.org:9243/base") == "https://search.example.org:9243/base"
    assert public_url("http://localhost:9200") == "http://localhost:9200"
