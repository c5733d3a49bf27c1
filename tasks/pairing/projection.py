"""Carrying labels across languages through Wikidata (CLIRMatrix step 6, and the MULTI rule).

A label says how well a source-language article answers a title query. The
target-language article about the same Wikidata item (QID) answers it as well,
so it inherits the label; that is how one monolingual retrieval yields
cross-lingual relevance judgements without any translation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tasks.pairing.config import SELF_LABEL

Labelled = list[tuple[int, int]]


def _ranked(labels: Mapping[int, int]) -> Labelled:
    return sorted(labels.items(), key=lambda item: (-item[1], item[0]))


def project(
    query_qid: str, labelled: Sequence[tuple[str | None, int]], target_by_qid: Mapping[str, int],
    *, force_self: bool = True,
) -> Labelled:
    """Target-language ``(doc_id, label)`` judgements of one query, best label first, then by doc id.

    Source documents without a QID, or whose item has no target-language
    article, drop out (they cannot be judged in the target language). When two
    source documents reach the same target article (duplicate items), the
    higher label wins. The target article of the query's own item gets 6; with
    ``force_self`` (``ClirConfig.force_self_label``) it is added even when the
    source retrieval did not reach it. A query whose item has no target article
    simply has no 6; whether such a query is kept is the caller's choice.
    """
    best: dict[int, int] = {}
    for position, (qid, label) in enumerate(labelled):
        if not 0 <= label <= SELF_LABEL:
            raise ValueError(f"query {query_qid}: label {label} at position {position} is outside 0-{SELF_LABEL}")
        if qid is None or qid not in target_by_qid:
            continue
        target = target_by_qid[qid]
        grade = SELF_LABEL if qid == query_qid else label
        best[target] = max(grade, best.get(target, grade))
    own = target_by_qid.get(query_qid)
    if own is not None and force_self:
        best[own] = SELF_LABEL
    return _ranked(best)


def multi_topics(
    queries_by_lang: Mapping[str, Mapping[str, Sequence[tuple[int, int]]]], languages: Sequence[str]
) -> list[str]:
    """The QIDs that have a labelled title query in every one of ``languages`` (sorted).

    MULTI keeps only topics present in all chosen languages, so every query has
    candidates from every other language.
    """
    if not languages:
        return []
    missing = [lang for lang in languages if lang not in queries_by_lang]
    if missing:
        raise ValueError(f"no monolingual judgements for MULTI language(s) {missing}")
    common = set(queries_by_lang[languages[0]])
    for lang in languages[1:]:
        common &= set(queries_by_lang[lang])
    return sorted(common)


def multi_candidates(
    query_lang: str, topic_qid: str,
    queries_by_lang: Mapping[str, Mapping[str, Sequence[tuple[int, int]]]], languages: Sequence[str],
) -> dict[str, Labelled]:
    """For a query in ``query_lang`` about ``topic_qid``: the candidates of every other MULTI language.

    ``queries_by_lang[lang][qid]`` holds the ``(doc_id, label)`` judgements of
    the monolingual retrieval in ``lang`` with that language's own title of the
    topic (its own article labelled 6). MULTI takes each language's list as it
    is instead of projecting the query language's labels, so each candidate set
    is judged by a retrieval in its own language. Each list comes back best
    label first, then by doc id.
    """
    if query_lang not in languages:
        raise ValueError(f"query language {query_lang!r} is not one of the MULTI languages {list(languages)}")
    candidates: dict[str, Labelled] = {}
    for lang in languages:
        if lang == query_lang:
            continue
        judged = queries_by_lang.get(lang, {}).get(topic_qid)
        if judged is None:
            raise ValueError(f"topic {topic_qid} has no monolingual judgements in {lang!r}; use multi_topics() first")
        labels: dict[int, int] = {}
        for doc_id, label in judged:
            labels[doc_id] = max(label, labels.get(doc_id, label))
        candidates[lang] = _ranked(labels)
    return candidates
