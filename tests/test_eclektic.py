"""ECLEKTIC candidates on the bundled sample: the sitelink equivalence check, the filters, the context."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.qa.eclektic import EclekticConfig, context_of, read_page_views, select_candidates
from tasks.sample.mirror import load_content
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
    for topic in topics:
        for lang, article in topic.articles.items():
            assert found[(lang, article.title)][0] == sorted(set(topic.articles) - {lang})


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
