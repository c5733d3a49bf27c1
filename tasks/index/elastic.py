"""The Elasticsearch backend: one index per language on a cluster, same contract as the embedded one.

Searches go through an alias per index path (named in the manifest at ``path``); each build loads a fresh
concrete index ``<alias>--…``, checks its count, then moves the alias in one atomic ``update_aliases``, so
a search never sees a half-built index.  Builds of one path must not run concurrently (the second would
delete the first's unfinished index).  Queries are ``most_fields`` over the boosted title and the body,
sorted by score then doc id, so scores and ties match the embedded backend's.

See ``docs/models-and-backends.md``, "Elasticsearch".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Iterable, Iterator, Sequence, Sized
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from elasticsearch import ApiError, Elasticsearch, SerializationError, TransportError, helpers
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential
from tqdm import tqdm

from tasks.errors import ConfigError
from tasks.index.analysis import ES_PRESEGMENTED_ANALYZER, AnalysisPlan, plan_for, prepare_document, prepare_query
from tasks.index.base import (
    DocumentRow,
    Hit,
    IndexConfig,
    IndexInfo,
    SearchBackendError,
    TransientSearchError,
    check_k,
    checked_row,
    read_info,
    resolve_info,
)
from tasks.progress import Progress
from tasks.retry import TRANSIENT_HTTP_STATUS
from tasks.warehouse.atomic import atomic_write_text

logger = logging.getLogger(__name__)

URL_ENV = "BABELBENCH_ES_URL"
API_KEY_ENV = "BABELBENCH_ES_API_KEY"
SIMILARITY = "babelbench_bm25"
#: between an alias and the build part of its concrete indexes' names (an alias never contains it)
BUILD_SEPARATOR = "--"
# index.max_result_window's default: deeper pages need the scroll or search_after APIs.
MAX_RESULT_WINDOW = 10_000


def public_url(url: str) -> str:
    """``url`` without user name and password, safe to record in a manifest or a log."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def index_settings(config: IndexConfig, shards: int, replicas: int) -> dict[str, Any]:
    """Settings of a new index: BM25 at the config's k1/b and the analyzer for pre-segmented text.

    Refreshing is off while bulk loading; the build refreshes once at the end.
    """
    return {
        "number_of_shards": shards,
        "number_of_replicas": replicas,
        "refresh_interval": "-1",
        "similarity": {SIMILARITY: {"type": "BM25", "k1": config.k1, "b": config.b}},
        "analysis": {
            "analyzer": {ES_PRESEGMENTED_ANALYZER: {"type": "custom", "tokenizer": "whitespace", "filter": ["lowercase"]}},
        },
    }


def index_mappings(plan: AnalysisPlan) -> dict[str, Any]:
    """Mappings of a new index: the doc id for the tie-break sort, title and body with term frequencies only."""
    text = {"type": "text", "analyzer": plan.es_analyzer, "similarity": SIMILARITY, "index_options": "freqs"}
    return {"dynamic": "strict", "properties": {"doc_id": {"type": "long"}, "title": text, "body": text}}


def search_body(query: str, k: int, title_boost: float) -> dict[str, Any]:
    """One ``msearch`` body: the words of ``query`` over boosted title and body, ties by doc_id."""
    return {
        "query": {
            "multi_match": {"query": query, "fields": [f"title^{title_boost}", "body"], "type": "most_fields", "operator": "or"},
        },
        "size": k,
        "sort": [{"_score": "desc"}, {"doc_id": "asc"}],
        "track_total_hits": False,
        "_source": False,
    }


@contextmanager
def engine_failures(what: str) -> Iterator[None]:
    """The client's errors raised as the backend's own, naming ``what`` was asked of which index.

    The client has retried HTTP 429/5xx, timeouts and dropped connections by the time they get here; they stay
    transient (:class:`TransientSearchError`), so the stage's own retries may try again later. Any other HTTP
    status, and an answer that is not JSON (a proxy's error page), fails for good.
    """
    try:
        yield
    except ApiError as exc:
        error = exc.body.get("error") if isinstance(exc.body, dict) else None
        reason = error.get("reason") if isinstance(error, dict) else error
        kind = TransientSearchError if exc.status_code in TRANSIENT_HTTP_STATUS else SearchBackendError
        raise kind(f"{what}: HTTP {exc.status_code}: {reason or exc.message}") from exc
    except SerializationError as exc:
        raise SearchBackendError(f"{what}: the answer is not JSON ({exc})") from exc
    except TransportError as exc:
        raise TransientSearchError(f"{what}: {exc}") from exc


def build_fingerprint(lang: str, settings: dict[str, Any], mappings: dict[str, Any]) -> str:
    """A short digest of what a build creates (language, settings, mappings), part of its concrete index's name."""
    body = json.dumps({"lang": lang, "settings": settings, "mappings": mappings}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:8]


class ElasticIndex:
    """The Elasticsearch backend; ``url``/``api_key`` default to ``$BABELBENCH_ES_URL``/``$BABELBENCH_ES_API_KEY``."""

    name = "elasticsearch"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        index_prefix: str = "babelbench",
        shards: int = 1,
        replicas: int = 0,
        bulk_chunk: int = 2_000,
        msearch_batch: int = 200,
        max_retries: int = 5,
        request_timeout: float = 120.0,
    ) -> None:
        url = url or os.environ.get(URL_ENV)
        if not url:
            raise ConfigError(f"the elasticsearch index backend needs a cluster URL: pass url= or set ${URL_ENV}")
        self.url = public_url(url)
        self.index_prefix = index_prefix.lower()
        self.shards = shards
        self.replicas = replicas
        self.bulk_chunk = bulk_chunk
        self.msearch_batch = msearch_batch
        self.max_retries = max_retries
        self.client = Elasticsearch(
            url,
            api_key=api_key or os.environ.get(API_KEY_ENV) or None,
            request_timeout=request_timeout,
            max_retries=max_retries,
            retry_on_status=(429, 502, 503, 504),
            retry_on_timeout=True,
            retry_backoff_base=0.5,
            retry_backoff_cap=30.0,
        )

    def alias_for(self, lang: str, path: Path) -> str:
        """The alias that the reference at ``path`` searches: stable across rebuilds, distinct per path."""
        digest = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
        return f"{self.index_prefix}-{lang.lower()}-{digest}"

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        plan = plan_for(lang, config.stem)
        path = Path(path)
        alias = self.alias_for(lang, path)
        previous_name = read_info(path).index_name if path.exists() else None
        with engine_failures(f"cleaning up the unfinished builds of {alias} at {self.url}"):
            self._remove_unaliased(alias)  # what builds killed before their swap left
        settings, mappings = index_settings(config, self.shards, self.replicas), index_mappings(plan)
        name = f"{alias}{BUILD_SEPARATOR}{build_fingerprint(lang, settings, mappings)}-{uuid.uuid4().hex[:8]}"
        with engine_failures(f"building index {name} at {self.url}"):
            self.client.indices.create(index=name, settings=settings, mappings=mappings)
            try:
                count = self._load(name, plan, docs, config, source=f"documents for the {lang} index {name}")
                self.client.indices.refresh(index=name)
                indexed = int(self.client.count(index=name)["count"])
                if indexed != count:
                    raise SearchBackendError(f"index {name} at {self.url} holds {indexed} documents after refreshing, not {count}")
                replaced = self._swap(alias, name)
            except BaseException:
                self._delete_index(name)
                raise
        info = IndexInfo(
            backend=self.name, lang=lang, path=path, doc_count=count, config=config,
            bm25_k1=config.k1, bm25_b=config.b, index_name=alias, url=self.url,
        )
        atomic_write_text(path, info.model_dump_json(indent=2))
        if previous_name and previous_name != alias:
            replaced.append(previous_name)  # a concrete index named by a manifest written before aliases
        for old in replaced:
            self._delete_index(old)
        logger.info("indexed %d %s documents into %s, now behind the alias %s at %s", count, lang, name, alias, self.url)
        return info

    def aliased(self, alias: str) -> list[str]:
        """The concrete indexes ``alias`` points at (none before the first build of its path)."""
        if not self.client.indices.exists_alias(name=alias):
            return []
        return sorted(self.client.indices.get_alias(name=alias).body)

    def builds(self, alias: str) -> dict[str, bool]:
        """Every concrete index built for ``alias``, and whether the alias points at it."""
        found = self.client.indices.get_alias(index=f"{alias}{BUILD_SEPARATOR}*", expand_wildcards="open,closed").body
        return {index: alias in (entry.get("aliases") or {}) for index, entry in found.items()}

    def _swap(self, alias: str, name: str) -> list[str]:
        """Move ``alias`` to ``name`` in one atomic request; the indexes it pointed at before."""
        previous = [index for index in self.aliased(alias) if index != name]
        actions: list[dict[str, Any]] = [{"remove": {"index": index, "alias": alias, "must_exist": True}} for index in previous]
        actions.append({"add": {"index": name, "alias": alias, "is_write_index": True}})
        self.client.indices.update_aliases(actions=actions)
        return previous

    def _remove_unaliased(self, alias: str) -> None:
        """Delete the concrete indexes of ``alias`` that it does not point at: builds that never reached their swap."""
        for index, serving in self.builds(alias).items():
            if not serving:
                logger.info("deleting %s at %s, an index build that never finished", index, self.url)
                self._delete_index(index)

    def _load(self, name: str, plan: AnalysisPlan, docs: Iterable[DocumentRow], config: IndexConfig, source: str) -> int:
        count = 0

        def actions() -> Iterator[dict[str, Any]]:
            nonlocal count
            with Progress(f"index {plan.lang}", len(docs) if isinstance(docs, Sized) else None, "doc") as progress:
                for position, row in enumerate(docs):
                    doc_id, title, text = checked_row(row, position, source)
                    title, body = prepare_document(title, text, plan, config.truncate)
                    count += 1
                    progress.advance()
                    yield {"_index": name, "_id": str(doc_id),
                           "_source": {"doc_id": doc_id, "title": title, "body": body}}

        try:
            for _failure in helpers.streaming_bulk(
                self.client, actions(), chunk_size=self.bulk_chunk, max_retries=self.max_retries,
                initial_backoff=1, max_backoff=60, yield_ok=False,
            ):
                pass  # raise_on_error (the default) turns the first failed chunk into BulkIndexError
        except helpers.BulkIndexError as exc:
            first = exc.errors[0] if exc.errors else {}
            raise SearchBackendError(f"index {name} at {self.url}: {len(exc.errors)} documents rejected, first: {first}") from exc
        return count

    def search(
        self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig
    ) -> list[list[Hit]]:
        info = resolve_info(index, self.name, lang, config)
        check_k(k)
        if k > MAX_RESULT_WINDOW:
            raise ConfigError(f"k={k} exceeds Elasticsearch's result window ({MAX_RESULT_WINDOW})")
        if info.url != self.url:
            logger.warning("index %s was built on %s; searching it on %s", info.index_name, info.url, self.url)
        plan = plan_for(lang, config.stem)
        prepared = [prepare_query(query, plan) for query in queries]
        results: list[list[Hit]] = []
        # a terminal bar only: a search is one batch of a stage (mining), whose own progress is what the UI shows
        for start in tqdm(range(0, len(prepared), self.msearch_batch), desc=f"search {lang}", unit="batch", disable=None):
            batch = prepared[start : start + self.msearch_batch]
            results.extend(self._msearch(str(info.index_name), batch, k, config.title_boost, start))
        return results

    def _msearch(self, name: str, queries: list[str], k: int, title_boost: float, offset: int) -> list[list[Hit]]:
        """One batch, retried as a whole while some of its items failed transiently (searches are reads)."""
        searches: list[dict[str, Any]] = []
        for query in queries:
            searches += [{}, search_body(query, k, title_boost)]

        def attempt() -> list[list[Hit]]:
            response = self.client.msearch(index=name, searches=searches, search_type="dfs_query_then_fetch")
            items = response.body.get("responses") if isinstance(response.body, dict) else None
            if not isinstance(items, list) or len(items) != len(queries):
                found = f"{len(items)} answers" if isinstance(items, list) else "no list of answers"
                raise SearchBackendError(f"index {name} at {self.url}: {found} to a multi-search of {len(queries)} "
                                         f"queries (from query {offset})")
            return [self._hits(item, name, offset + i, query) for i, (item, query) in enumerate(zip(items, queries))]

        retrying = Retrying(
            retry=retry_if_exception_type(TransientSearchError),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_random_exponential(multiplier=0.5, max=30),
            reraise=True,
        )
        with engine_failures(f"index {name} at {self.url}: multi-search of queries {offset} to {offset + len(queries) - 1}"):
            return retrying(attempt)

    def _hits(self, item: dict[str, Any], name: str, position: int, query: str) -> list[Hit]:
        if "error" in item:
            status = int(item.get("status", 500))
            reason = item["error"].get("reason", item["error"]) if isinstance(item["error"], dict) else item["error"]
            message = f"index {name} at {self.url}: query {position} ({query!r:.100}) failed with HTTP {status}: {reason}"
            raise (TransientSearchError if status in TRANSIENT_HTTP_STATUS else SearchBackendError)(message)
        return [(int(hit["sort"][1]), float(hit["sort"][0])) for hit in item["hits"]["hits"]]

    def drop(self, index: IndexInfo | Path) -> None:
        path = index.path if isinstance(index, IndexInfo) else Path(index)
        name = str(read_info(path).index_name)
        # an alias: the indexes it points at and any unfinished builds; a manifest from before aliases: its index
        with engine_failures(f"dropping index {name} at {self.url}"):
            concrete = sorted(set(self.aliased(name) or [name]) | set(self.builds(name)))
        for index in concrete:
            self._delete_index(index)
        path.unlink()

    def _delete_index(self, name: str) -> None:
        """Best effort: a leftover index wastes space but breaks nothing, and must not hide the build's own error."""
        try:
            self.client.options(ignore_status=404).indices.delete(index=name)
        except (ApiError, TransportError) as exc:
            logger.warning("could not delete index %s at %s: %s", name, self.url, exc)
