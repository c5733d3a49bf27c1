"""ECLEKTIC candidates on the bundled sample: the sitelink equivalence check and its coverage, the filters, the context."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.corpus import CorpusParams, corpus_flow
from tasks.errors import ConfigError
from tasks.qa.eclektic import EclekticConfig, context_of, read_page_views, select_candidates
from tasks.sample.mirror import build_sample_mirror, load_content
from tasks.warehouse.db import Warehouse

LANGS = ["en", "de", "fr", "ja", "zh"]
DISAMBIGUATION = "Q4167410"


def _topics() -> list:
    content = load_content()
    return [t for t in content.topics if content.kinds[t.kind].instance_of != DISAMBIGUATION]


def _candidates(wh: Warehouse, config: EclekticConfig) -> dict[tuple[str, str], tuple]:
    for lang in LANGS:
        select_candidates(wh, "b", lang, LANGS, config, "fp")
    rows = wh.query("SELECT lang, title, linked_langs, eligible, reason, selected, chars, page_views FROM qa_candidates")
    return {(r[0], r[1]): r[2:] for r in rows}


def test_only_articles_without_an_equivalent_in_another_chosen_language_qualify(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        found = _candidates(wh, EclekticConfig(min_chars=0))
    topics = _topics()
    # from the sample's YAML: topics with an article in exactly one language are the local facts
    local = {(next(iter(t.articles)), next(iter(t.articles.values())).title) for t in topics if len(t.articles) == 1}
    assert {key for key, row in found.items() if row[1]} == local
    assert {key for key, row in found.items() if row[3]} == local  # min_chars 0, per_lang 100: all eligible are selected
    for topic in topics:  # the sample's other wikis (sw) are not ingested here
        for lang, article in topic.articles.items():
            if lang in LANGS:
                assert found[(lang, article.title)][0] == sorted((set(topic.articles) & set(LANGS)) - {lang})


def test_an_equivalent_in_a_chosen_language_makes_an_article_ineligible_and_one_in_an_unchosen_language_does_not(
    sample_home: Path,
) -> None:
    query = "SELECT linked_langs, eligible, reason, checked_langs FROM qa_candidates WHERE title = 'The Salt Queen'"
    with Warehouse(sample_home) as wh:
        # The Salt Queen (Q9100018) has articles in en and fr only (topics-music.yaml)
        select_candidates(wh, "b", "en", ["en", "de", "fr"], EclekticConfig(min_chars=0), "fp")
        fr_chosen = wh.query(query)
        select_candidates(wh, "b", "en", ["en", "de"], EclekticConfig(min_chars=0), "fp")
        fr_not_chosen = wh.query(query)
    assert fr_chosen == [(["fr"], False, "has an equivalent in fr", ["de", "fr"])]
    assert fr_not_chosen == [([], True, None, ["de"])]


def test_every_candidate_records_the_other_chosen_languages_its_check_covered(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        messages = {lang: select_candidates(wh, "b", lang, LANGS, EclekticConfig(min_chars=0), "fp").message
                    for lang in LANGS}
        checked = dict(wh.query("SELECT lang, list(DISTINCT checked_langs) FROM qa_candidates GROUP BY lang"))
        unchecked = wh.scalar("SELECT count(*) FROM qa_candidates WHERE checked_langs IS NULL")
    assert checked == {
        "en": [["de", "fr", "ja", "zh"]],
        "de": [["en", "fr", "ja", "zh"]],
        "fr": [["de", "en", "ja", "zh"]],
        "ja": [["de", "en", "fr", "zh"]],
        "zh": [["de", "en", "fr", "ja"]],
    }
    assert unchecked == 0
    assert messages["ja"].endswith("; checked against de, en, fr, zh")
    assert messages["en"].endswith("; checked against de, fr, ja, zh")


def _cell(wh: Warehouse, lang: str) -> list[tuple]:
    return wh.query("SELECT * FROM qa_candidates WHERE benchmark = 'b' AND lang = ? ORDER BY page_id", [lang])


def test_a_chosen_language_never_ingested_is_refused_by_name_and_the_cell_keeps_its_rows(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        select_candidates(wh, "b", "en", LANGS, EclekticConfig(min_chars=0), "fp-before")
        before = _cell(wh, "en")
        # ko was never ingested: without the refusal every en article would look local
        with pytest.raises(ConfigError) as refused:
            select_candidates(wh, "b", "en", [*LANGS, "ko"], EclekticConfig(min_chars=0), "fp-after")
        after = _cell(wh, "en")
    message = str(refused.value)
    assert message.startswith("ECLEKTIC b [en]: no sitelinks or QIDs in the warehouse for the chosen language(s) ko,")
    assert "`babelbench corpus ingest --lang ko`" in message and "\n" not in message
    assert before and {row[-2] for row in before} == {"fp-before"}  # fingerprint column: the first build's rows
    assert after == before


def test_a_chosen_language_ingested_without_qids_is_refused_but_qids_in_its_documents_are_enough(
    sample_home: Path, tmp_path: Path,
) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")

    def ingest_ja(kind: str) -> None:
        corpus_flow(CorpusParams(langs=["ja"], source=mirror.root.as_uri(), home=str(sample_home), kind=kind,
                                 sitelinks="none", progress=False))

    ingest_ja("xml")  # XML pages carry no QID and --sitelinks none adds none: ja documents, no ja QIDs
    with Warehouse(sample_home) as wh:
        assert wh.query("SELECT count(*), count(qid) FROM documents WHERE lang = 'ja'") == [(31, 0)]
        with pytest.raises(ConfigError, match=r"chosen language\(s\) ja, .*`babelbench corpus ingest --lang ja`"):
            select_candidates(wh, "b", "zh", LANGS, EclekticConfig(min_chars=0), "fp")
        assert wh.scalar("SELECT count(*) FROM qa_candidates") == 0
    ingest_ja("cirrus")  # CirrusSearch documents carry their QIDs; still no ja rows in sitelinks
    with Warehouse(sample_home) as wh:
        assert wh.scalar("SELECT count(*) FROM sitelinks WHERE lang = 'ja'") == 0
        select_candidates(wh, "b", "zh", LANGS, EclekticConfig(min_chars=0), "fp")
        # 米拉公园球场 (Q9100026) has articles in ja and zh only: its ja equivalent is found through the documents
        row = wh.query("SELECT linked_langs, eligible, reason, checked_langs FROM qa_candidates WHERE title = '米拉公园球场'")
    assert row == [(["ja"], False, "has an equivalent in ja", ["de", "en", "fr", "ja"])]


def test_the_length_filter_records_its_reason_and_a_smaller_floor_admits_the_short_articles(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        strict = _candidates(wh, EclekticConfig())
        short = {key: row for key, row in strict.items() if not row[0] and row[4] < 200}
        assert short, "the sample has local articles shorter than 200 characters (ja, zh)"
        for (lang, _), (_, eligible, reason, selected, chars, _) in short.items():
            assert not eligible and not selected and reason == f"{chars} characters < min_chars 200"
        loose = _candidates(wh, EclekticConfig(min_chars=100))
    assert all(loose[key][1] for key in short)


def test_page_views_sum_desktop_and_mobile_and_apply_the_floor(sample_home: Path, tmp_path: Path) -> None:
    views = tmp_path / "pageviews-20261101"
    views.write_text(
        "en Brennmoor_Lantern_Walk 90 0\n"
        "en.m Brennmoor_Lantern_Walk 20 0\n"      # 110 in all
        "de Tarsker_Mohnzopf 99 0\n"
        "de.wikisource Tarsker_Mohnzopf 500 0\n"  # another project: not counted
        "fr Joute_des_bateliers_d'Orvik 100 0\n",
        encoding="utf-8")
    with Warehouse(sample_home) as wh:
        found = _candidates(wh, EclekticConfig(min_chars=0, page_views=str(views)))
    assert found[("en", "Brennmoor Lantern Walk")][1:3] == (True, None)
    assert found[("en", "Brennmoor Lantern Walk")][5] == 110
    assert found[("de", "Tarsker Mohnzopf")][1:3] == (False, "99 page views < min_page_views 100")
    assert found[("fr", "Joute des bateliers d'Orvik")][1] is True  # exactly at the floor
    assert found[("de", "Fischereimuseum Ondrach")][2] == "0 page views < min_page_views 100"


def test_a_bad_page_view_line_names_the_file_and_line(tmp_path: Path) -> None:
    views = tmp_path / "views"
    views.write_text("en Velna 5 0\nen Velna many 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"views line 2: count_views 'many' is not a number"):
        read_page_views(views, ["en"])


def test_sample_per_language_is_seeded_and_stable(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        one = _candidates(wh, EclekticConfig(min_chars=0, per_lang=1, sample_seed=7))
        again = _candidates(wh, EclekticConfig(min_chars=0, per_lang=1, sample_seed=7))
    selected = {key for key, row in one.items() if row[3]}
    assert selected == {key for key, row in again.items() if row[3]}
    assert sorted(lang for lang, _ in selected) == ["de", "en", "fr", "ja", "zh"]  # de has two local articles, keeps one


def test_context_is_the_first_sentences_joined_by_the_script() -> None:
    assert context_of("Erster Satz. Zweiter Satz! Dritter Satz?", "de", 2) == "Erster Satz. Zweiter Satz!"
    assert context_of("第一句。第二句！第三句？", "zh", 2) == "第一句。第二句！"
    assert context_of("पहला वाक्य। दूसरा वाक्य।", "hi", 10) == "पहला वाक्य। दूसरा वाक्य।"
