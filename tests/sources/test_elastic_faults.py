"""The Elasticsearch backend's searches under faults, against a loopback endpoint that answers like a cluster in
trouble: a query refused as overloaded inside a batch, a query refused for good, an engine overloaded for longer
than the retries, a whole request answered 503, and a reply that is not JSON.

How the backend ranks is checked against a real cluster by the conformance suite (``test_index_conformance.py``,
with ``BABELBENCH_ES_URL``); what is checked here is what it does when the cluster misbehaves, which runs in every
clone. The endpoint's successful answers are the hits it is told to give, so each test knows what must come back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tasks.index.base import IndexConfig, IndexInfo, SearchBackendError, TransientSearchError
from tasks.index.elastic import ElasticIndex
from tests.support.loopback_http import LoopbackServer, Reply

INDEX = "babelbench-en-test"
MSEARCH = f"/{INDEX}/_msearch"
CONFIG = IndexConfig()
# the official client refuses a 2xx answer that does not say it comes from Elasticsearch
HEADERS = {"X-Elastic-Product": "Elasticsearch", "Content-Type": "application/json"}


@pytest.fixture
def endpoint() -> Iterator[tuple[LoopbackServer, str]]:
    with LoopbackServer() as server:
        yield server, server.base_url


def _backend(url: str, **options: Any) -> ElasticIndex:
    return ElasticIndex(url, msearch_batch=2, max_retries=2, request_timeout=5.0, **options)


def _info(url: str, tmp_path: Path) -> IndexInfo:
    return IndexInfo(backend="elasticsearch", lang="en", path=tmp_path / "en.index", doc_count=10, config=CONFIG,
                     bm25_k1=CONFIG.k1, bm25_b=CONFIG.b, index_name=INDEX, url=url)


def _ok(*hits: tuple[int, float]) -> dict[str, Any]:
    """One query's answer holding ``hits`` (doc id, score), sorted as the backend's search body asks."""
    return {"status": 200, "hits": {"hits": [{"_id": str(doc), "sort": [score, doc]} for doc, score in hits]}}


def _failed(status: int, reason: str) -> dict[str, Any]:
    return {"status": status, "error": {"type": "some_exception", "reason": reason}}


def _answer(*items: dict[str, Any]) -> Reply:
    return Reply(200, HEADERS, json.dumps({"took": 1, "responses": list(items)}).encode())


def _bodies(server: LoopbackServer) -> list[bytes]:
    return [request.body for request in server.requests_for(MSEARCH)]


def _queries_sent(body: bytes) -> list[str]:
    """The query texts of one multi-search request (its lines alternate header and body)."""
    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    return [json.dumps(search["query"], sort_keys=True) for search in lines[1::2]]


QUERIES = ["river", "bridge", "old town"]


def test_a_batch_with_a_query_refused_as_overloaded_is_sent_again_whole_and_its_second_answer_kept(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    server.queue(
        MSEARCH,
        _answer(_ok((4, 2.5)), _failed(429, "rejected execution of search")),  # batch 1, first try
        _answer(_ok((4, 2.5), (9, 1.0)), _ok((7, 3.0))),  # batch 1 again
        _answer(_ok()),  # batch 2: a query without hits
    )
    backend = _backend(url)
    hits = backend.search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert hits == [[(4, 2.5), (9, 1.0)], [(7, 3.0)], []]
    assert len(_bodies(server)) == 3
    # the whole first batch went again, the same two queries in the same order; the second batch held the third
    assert _queries_sent(_bodies(server)[0]) == _queries_sent(_bodies(server)[1])
    assert len(_queries_sent(_bodies(server)[0])) == 2 and len(_queries_sent(_bodies(server)[2])) == 1


def test_a_query_refused_for_good_fails_the_search_at_once_naming_its_position_and_text(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    server.queue(MSEARCH, _answer(_ok((1, 1.0)), _ok((2, 1.0))), _answer(_failed(400, "maxClauseCount is set to 1024")))
    with pytest.raises(SearchBackendError) as caught:
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert not isinstance(caught.value, TransientSearchError)
    message = str(caught.value)
    # the third query (position 2, in the second batch) is the one named, with the engine's reason and the index
    assert "query 2 ('old town')" in message and "HTTP 400" in message and "maxClauseCount" in message
    assert INDEX in message and url in message
    assert len(_bodies(server)) == 2  # not retried


def test_an_engine_still_overloaded_after_every_retry_fails_as_transient(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    server.always(MSEARCH, _answer(_failed(503, "no shard available"), _ok()))
    with pytest.raises(TransientSearchError, match=r"query 0 \('river'\) failed with HTTP 503: no shard available"):
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert len(_bodies(server)) == 3  # max_retries=2: the first try and two more, then the error is the operator's


def test_a_request_answered_503_is_sent_again_by_the_client(endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    unavailable = Reply(503, HEADERS, json.dumps({"error": {"type": "unavailable", "reason": "restarting"},
                                                  "status": 503}).encode())
    server.queue(MSEARCH, unavailable, _answer(_ok((5, 2.0)), _ok((6, 1.5))), _answer(_ok((8, 0.5))))
    hits = _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert hits == [[(5, 2.0)], [(6, 1.5)], [(8, 0.5)]]
    assert len(_bodies(server)) == 3


def test_an_answer_that_is_not_json_fails_the_search_naming_the_index(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    server.always(MSEARCH, Reply(200, HEADERS, b"<html>proxy error</html>"))
    with pytest.raises(SearchBackendError) as caught:
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert INDEX in str(caught.value) and url in str(caught.value)


def test_an_answer_with_fewer_items_than_queries_fails_the_search_naming_the_index(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    server.always(MSEARCH, _answer(_ok((1, 1.0))))  # one item for a batch of two queries
    with pytest.raises(SearchBackendError) as caught:
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert INDEX in str(caught.value) and "2 queries" in str(caught.value)


def test_a_missing_index_fails_the_search_for_good_with_the_engines_reason(
        endpoint: tuple[LoopbackServer, str], tmp_path: Path) -> None:
    server, url = endpoint
    missing = {"error": {"type": "index_not_found_exception", "reason": f"no such index [{INDEX}]"}, "status": 404}
    server.always(MSEARCH, Reply(404, HEADERS, json.dumps(missing).encode()))
    with pytest.raises(SearchBackendError) as caught:
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert not isinstance(caught.value, TransientSearchError)
    assert f"HTTP 404: no such index [{INDEX}]" in str(caught.value) and "queries 0 to 1" in str(caught.value)
    assert len(_bodies(server)) == 1


def test_a_cluster_that_cannot_be_reached_fails_as_transient_naming_it(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        url = server.base_url
    # the port was just given back: connections to it are refused
    with pytest.raises(TransientSearchError) as caught:
        _backend(url).search(_info(url, tmp_path), "en", QUERIES, 10, CONFIG)
    assert INDEX in str(caught.value) and url in str(caught.value)
