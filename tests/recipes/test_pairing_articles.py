"""XRAG pairing's column store of articles: what goes in comes back out as the same articles, and the join's
postings are each article's evidence (its entities and its own QID), whatever the mix of missing values."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone

import pytest

from tasks.qa.pairing_articles import Article, ArticleTable, EntityCodes

ZONES = [timezone.utc, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]


def _random_articles(rng: random.Random, lang: str, count: int) -> list[Article]:
    vocabulary = [f"Q{n}" for n in range(1, 60)]
    articles = []
    for page_id in rng.sample(range(1, 10_000), count):  # not in page-id order
        qid = None if rng.random() < 0.2 else rng.choice(vocabulary)
        stamp = None if rng.random() < 0.2 else datetime(2020, 1, 1, tzinfo=rng.choice(ZONES)) + timedelta(
            seconds=rng.randint(0, 10**8), microseconds=rng.randint(0, 999_999))
        first = None if rng.random() < 0.5 else date(2024, 1, 1) + timedelta(days=rng.randint(0, 900))
        articles.append(Article(lang, page_id, qid, f"title {page_id} é 東", stamp,
                                frozenset(rng.sample(vocabulary, rng.randint(0, 12))), first))
    return articles


def _table(lang: str, articles: list[Article], codes: EntityCodes) -> ArticleTable:
    table = ArticleTable(lang, codes)
    for a in articles:  # the own QID among the mentions, as a matcher finds it, is for the table to drop
        table.add(a.page_id, a.qid, a.title, a.timestamp, [codes.code(q) for q in a.evidence], a.first_seen)
    return table


@pytest.mark.parametrize("seed", range(20))
def test_every_article_comes_back_as_it_went_in_and_is_found_by_its_page_id(seed: int) -> None:
    rng = random.Random(seed)
    codes = EntityCodes()
    articles = _random_articles(rng, "de", rng.randint(0, 80))
    table = _table("de", articles, codes)
    expected = [Article(a.lang, a.page_id, a.qid, a.title, a.timestamp, a.entities - {a.qid}, a.first_seen)
                for a in articles]
    assert list(table) == expected  # timestamps compare as instants, whatever their zone
    assert len(table) == len(expected) and table[-1:] == expected[-1:] and table[::2] == expected[::2]
    assert all(table.find(a.page_id) == a for a in expected)
    assert table.find(10_001) is None and table.find(0) is None
    with pytest.raises(IndexError):
        table[len(expected)]


@pytest.mark.parametrize("seed", range(20))
def test_the_join_sees_each_articles_evidence_and_its_qid_as_codes_shared_across_languages(seed: int) -> None:
    rng = random.Random(seed)
    codes = EntityCodes()
    tables = {lang: _table(lang, _random_articles(rng, lang, rng.randint(1, 60)), codes) for lang in ("en", "ja")}
    for lang, table in tables.items():
        side = table.side()
        postings = sorted(zip(side.articles.tolist(), side.entities.tolist(), strict=True))
        assert postings == sorted((position, codes.code(q)) for position, a in enumerate(table) for q in a.evidence)
        assert side.qids.tolist() == [-1 if a.qid is None else codes.code(a.qid) for a in table]
        assert side.page_ids.tolist() == [a.page_id for a in table] and side.lang == lang
        assert side.first_seen.to_pylist() == [a.first_seen and a.first_seen.toordinal() for a in table]
        stamps = [None if us is None else datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)
                  for us in side.micros.to_pylist()]
        assert stamps == [a.timestamp for a in table]
    assert codes.qids_of(range(len(codes.qids))) == frozenset(
        q for table in tables.values() for a in table for q in a.evidence)
