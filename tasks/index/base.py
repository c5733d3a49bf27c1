"""The search-index interface that every backend implements, and what they share.

The CLIR recipe needs one thing from an index: for each title query, the top
``k`` documents of one language by BM25 over title (boosted) and body. An
embedded engine does this on a laptop and Elasticsearch does it at scale; both
sit behind :class:`SearchIndex` and pass the same conformance tests, so a
pipeline switches backends by name without other changes.

An index is referenced by a path: a directory for the embedded engine, a small
JSON file naming the remote index for Elasticsearch. Either holds an
:class:`IndexInfo` manifest, so a later search (in another process, from the
warehouse's reference) knows how the index was built and refuses a config
that would analyse queries differently from the documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.errors import BabelbenchError, ConfigError, InputFormatError, TransientError
from tasks.stage import StageConfig

DocumentRow = tuple[int, str, str]
"""One document to index: (doc_id, title, text)."""
Hit = tuple[int, float]
"""One search result: (doc_id, score)."""

MANIFEST_NAME = "babelbench-index.json"
"""The manifest file inside an index directory."""


class IndexConfig(StageConfig):
    """How documents are indexed and queried.

    The defaults are the CLIRMatrix setting: BM25 with k1 = 1.2 and b = 0.3,
    title boosted ×2, bodies cut to the CLIRMatrix length. Every backend
    applies k1 and b when it builds the index and records them in
    :class:`IndexInfo`.
    """

    k1: float = Field(1.2, gt=0)
    b: float = Field(0.3, ge=0, le=1)
    title_boost: float = Field(2.0, gt=0)
    truncate: bool = True
    stem: bool = True

    def build_fields(self) -> dict[str, Any]:
        """The fields fixed when the index is built; ``title_boost`` applies per query."""
        return self.model_dump(exclude={"title_boost"})


class IndexInfo(BaseModel):
    """What a build produced: where the index is and how it was made.

    ``bm25_k1``/``bm25_b`` are the parameters the backend actually applies
    (an index built before the embedded backend applied the config's records
    tantivy's fixed k1 = 1.2, b = 0.75 here, and is refused).
    ``index_name`` and ``url`` locate a remote index (Elasticsearch); the URL
    never carries credentials.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str
    lang: str
    path: Path
    doc_count: int
    config: IndexConfig
    bm25_k1: float
    bm25_b: float
    index_name: str | None = None
    url: str | None = None


class SearchBackendError(BabelbenchError):
    """The search engine refused a request; the message names the index and the request."""


class TransientSearchError(SearchBackendError, TransientError):
    """The engine was overloaded or unavailable (HTTP 429/5xx): a later attempt may succeed."""


@runtime_checkable
class SearchIndex(Protocol):
    """A BM25 engine for one language per index.

    ``search`` returns, per query, at most ``k`` (doc_id, score) pairs sorted
    by score descending and doc_id ascending, so equal scores always come out
    in the same order. A query is matched word by word (OR semantics, no
    phrases, no query syntax) against the boosted title and the body; a query
    without words returns no hits.
    """

    name: str

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        """Index ``docs`` and publish the index at ``path`` atomically, replacing any index there."""
        ...

    def search(
        self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig
    ) -> list[list[Hit]]:
        """The top ``k`` hits of each query, in query order."""
        ...

    def drop(self, index: IndexInfo | Path) -> None:
        """Delete the index and its reference at ``path``."""
        ...


def manifest_path(path: Path) -> Path:
    """Where the manifest of the index referenced by ``path`` lives."""
    return path / MANIFEST_NAME if path.is_dir() else path


def read_info(path: Path) -> IndexInfo:
    """The manifest of the index at ``path``; a missing or damaged one names the file."""
    manifest = manifest_path(path)
    try:
        return IndexInfo.model_validate_json(manifest.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"no index at {path} (expected the manifest {manifest})") from None
    except ValidationError as exc:
        raise InputFormatError(str(manifest), None, f"not an index manifest: {exc}") from exc


def resolve_info(index: IndexInfo | Path, backend: str, lang: str, config: IndexConfig) -> IndexInfo:
    """The index's manifest, checked against what the caller is about to do with it.

    Searching with another language or another analysis than the build used,
    or an index whose scores do not follow its own config's k1/b, would
    silently return poor results, so it is an error instead.
    """
    info = index if isinstance(index, IndexInfo) else read_info(Path(index))
    if (info.bm25_k1, info.bm25_b) != (info.config.k1, info.config.b):
        raise ConfigError(
            f"index at {info.path} scores with BM25 k1={info.bm25_k1}, b={info.bm25_b}, not its config's "
            f"k1={info.config.k1}, b={info.config.b}; rebuild the index"
        )
    if info.backend != backend:
        raise ConfigError(f"index at {info.path} was built by {info.backend!r}, not {backend!r}")
    if info.lang != lang:
        raise ConfigError(f"index at {info.path} holds {info.lang!r} documents, not {lang!r}")
    if info.config.build_fields() != config.build_fields():
        raise ConfigError(
            f"index at {info.path} was built with {info.config.build_fields()}, "
            f"but the search config says {config.build_fields()}; rebuild the index or use its config"
        )
    return info


def check_k(k: int) -> None:
    """A non-positive ``k`` is a configuration mistake, not an empty result."""
    if k < 1:
        raise ConfigError(f"k must be at least 1, got {k}")


def checked_row(row: Any, position: int, source: str) -> DocumentRow:
    """``row`` as (doc_id, title, text), or an error naming the row and what is wrong with it."""
    try:
        doc_id, title, text = row
    except (TypeError, ValueError):
        raise InputFormatError(source, f"row {position}", f"expected (doc_id, title, text), got {row!r:.200}") from None
    if not isinstance(doc_id, int) or not isinstance(title, str) or not isinstance(text, str):
        raise InputFormatError(
            source, f"row {position}",
            f"expected (int, str, str), got ({type(doc_id).__name__}, {type(title).__name__}, {type(text).__name__}) for doc {doc_id!r}",
        )
    return doc_id, title, text
