"""Label projection through Wikidata and the MULTI candidate rule (tasks.pairing.projection)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tasks.pairing import qrels
from tasks.pairing.config import ClirConfig
from tasks.pairing.projection import multi_candidates, multi_topics, project

# Target-language (de) articles by Wikidata item.
DE = {"Q64": 640, "Q183": 1830, "Q1055": 10550, "Q42": 420}


def test_labels_follow_the_qid_and_own_article_gets_six() -> None:
    labelled = [("Q64", 6), ("Q183", 5), ("Q1055", 3)]
    assert project("Q64", labelled, DE) == [(640, 6), (1830, 5), (10550, 3)]


def test_documents_without_qid_or_counterpart_drop_out() -> None:
    labelled = [("Q64", 6), (None, 5), ("Q999", 4), ("Q42", 2)]
    assert project("Q64", labelled, DE) == [(640, 6), (420, 2)]


def test_own_article_is_added_when_source_retrieval_missed_it() -> None:
    assert project("Q64", [("Q183", 4)], DE) == [(640, 6), (1830, 4)]


def test_own_article_is_not_added_without_forcing() -> None:
    assert project("Q64", [("Q183", 4)], DE, force_self=False) == [(1830, 4)]


def test_source_document_of_the_query_item_projects_to_six_whatever_its_label() -> None:
    assert project("Q64", [("Q64", 2)], DE, force_self=False) == [(640, 6)]


def test_query_item_without_target_article_has_no_six() -> None:
    assert project("Q1", [("Q183", 5), ("Q42", 1)], DE) == [(1830, 5), (420, 1)]


def test_two_sources_on_one_target_keep_the_higher_label() -> None:
    # Two source articles linked to the same item (e.g. a merged item): 2 then 4, and 4 then 2.
    target = {"Q5": 50, "Q7": 70}
    assert project("Q1", [("Q5", 2), ("Q7", 3), ("Q5", 4)], target) == [(50, 4), (70, 3)]
    assert project("Q1", [("Q5", 4), ("Q5", 2)], target) == [(50, 4)]


def test_ties_are_ordered_by_doc_id() -> None:
    target = {"Qa": 30, "Qb": 10, "Qc": 20}
    assert project("Qz", [("Qa", 3), ("Qb", 3), ("Qc", 5)], target) == [(20, 5), (10, 3), (30, 3)]


def test_labels_outside_zero_to_six_are_rejected() -> None:
    with pytest.raises(ValueError, match="label 7 at position 1"):
        project("Q64", [("Q183", 5), ("Q42", 7)], DE)


# Monolingual judgements per language and topic: the retrieval with that language's own title.
MONO = {
    "en": {"Q64": [(1, 6), (2, 5)], "Q90": [(3, 6)]},
    "de": {"Q64": [(11, 4), (10, 6), (12, 4)], "Q90": [(13, 6)]},
    "fr": {"Q64": [(21, 6)], "Q1": [(22, 6)]},
}


def test_multi_topics_are_those_in_every_language() -> None:
    assert multi_topics(MONO, ["en", "de", "fr"]) == ["Q64"]
    assert multi_topics(MONO, ["en", "de"]) == ["Q64", "Q90"]


def test_multi_topics_need_judgements_for_every_language() -> None:
    with pytest.raises(ValueError, match="'ja'"):
        multi_topics(MONO, ["en", "ja"])


def test_multi_candidates_take_each_languages_own_judgements() -> None:
    candidates = multi_candidates("en", "Q64", MONO, ["en", "de", "fr"])
    assert candidates == {"de": [(10, 6), (11, 4), (12, 4)], "fr": [(21, 6)]}


def test_multi_candidates_reject_a_topic_missing_in_a_language() -> None:
    with pytest.raises(ValueError, match="Q90.*'fr'"):
        multi_candidates("en", "Q90", MONO, ["en", "de", "fr"])


def test_multi_candidates_reject_a_query_language_outside_the_set() -> None:
    with pytest.raises(ValueError, match="'ja'"):
        multi_candidates("ja", "Q64", MONO, ["en", "de", "fr"])


def test_multi_languages_are_the_builds_languages_in_the_configured_set_in_build_order() -> None:
    assert ClirConfig(multi_languages=("de", "en", "ar")).multi_langs(["en", "ja", "de"]) == ["en", "de"]
    # The default is the paper's MULTI-8: a build's other languages stay BI-only.
    assert ClirConfig().multi_langs(["ko", "zh", "en", "th", "ja"]) == ["zh", "en", "ja"]


@pytest.mark.parametrize("force_self", [True, False])
def test_a_range_of_queries_projected_at_once_is_each_query_projected_alone(force_self: bool) -> None:
    """The qrels stage projects arrays of many queries' hits; :func:`project`, one query at a time, is the rule.
    Random hits with pages without items, items without a target article, two source pages of one item, two target
    pages of one item, and queries whose own article was or was not retrieved."""
    rng = random.Random(17)
    for _ in range(40):
        src_qids = {page: f"Q{rng.randint(1, 60)}" for page in rng.sample(range(1, 300), 150)}
        tgt_qids = {page: f"Q{rng.randint(1, 60)}" for page in sorted(rng.sample(range(1000, 1200), 50))}
        tgt_by_qid = {qid: page for page, qid in tgt_qids.items()}
        hits = []
        for query in rng.sample(range(1, 300), 40):
            docs = rng.sample(range(1, 300), rng.randint(1, 30))
            hits += [(query, doc, rng.randint(0, 6)) for doc in docs]
        rng.shuffle(hits)  # a range's hits come in no order
        numbering: dict[str, int] = {}
        src, tgt = qrels._Items.of(src_qids, numbering), qrels._Items.of(tgt_qids, numbering)
        target_of_item = tgt.pages_of(len(numbering))
        assert {qid: int(target_of_item[number]) for qid, number in numbering.items()
                if target_of_item[number] >= 0} == tgt_by_qid
        query, doc, label = (np.array(column, dtype=dtype) for column, dtype in zip(zip(*hits), (np.int64, np.int64, np.int8)))
        got = qrels._projected(query, doc, label, src, target_of_item, force_self, "en")
        expected = []
        for query_id in sorted({h[0] for h in hits}):
            if query_id not in src_qids:
                continue
            ranked = [(src_qids.get(d), lab) for q, d, lab in sorted(hits, key=lambda h: h[1]) if q == query_id]
            projected = project(src_qids[query_id], ranked, tgt_by_qid, force_self=force_self)
            if any(lab > 0 for _, lab in projected):
                expected += [(query_id, d, lab) for d, lab in projected]
        assert list(zip(*(column.tolist() for column in got))) == expected
