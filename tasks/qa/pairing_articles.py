"""One language's articles as XRAG pairing reads them: in columns, their entities as integer codes.

Pairing reads every article of its languages and keeps only the pairs it ranks best. One Python object per article,
its entities a set of QID strings, costs a few kilobytes: 3.8 GB at 300,000 articles per language, about 12 GB at a
million. Here an article costs its title, a few integers and four bytes per entity it mentions, and an
:class:`Article` is made only for an article that a kept pair names.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import overload

import numpy as np
import pyarrow as pa

from tasks.qa.entity_join import EPOCH, MICROSECOND, Side

NO_QID = -1


@dataclass(frozen=True)
class Article:
    """One article as pairing sees it: identity, timestamp and the entities (QIDs) its text mentions."""

    lang: str
    page_id: int
    qid: str | None
    title: str
    timestamp: datetime | None
    entities: frozenset[str]  # excluding its own QID
    first_seen: date | None = None  # its first-appearance date, set in a live build (a window)

    @property
    def key(self) -> str:
        return f"{self.lang}:{self.page_id}"

    @property
    def evidence(self) -> frozenset[str]:
        """What it can share with another article: the entities it mentions and its own subject."""
        return (self.entities | {self.qid}) if self.qid else self.entities


class EntityCodes:
    """QIDs as integers, shared by every language of one pairing so that entities compare across languages."""

    def __init__(self) -> None:
        self.qids: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, qid: str) -> int:
        code = self._codes.get(qid)
        if code is None:
            code = self._codes[qid] = len(self.qids)
            self.qids.append(qid)
        return code

    def qids_of(self, codes: Iterable[int]) -> frozenset[str]:
        return frozenset(self.qids[code] for code in codes)


class ArticleTable(Sequence[Article]):
    """The articles of one language, added one by one; indexing one makes its :class:`Article`."""

    def __init__(self, lang: str, codes: EntityCodes) -> None:
        self.lang, self.codes = lang, codes
        self.page_ids = array("q")
        self.qids = array("i")  # codes, NO_QID without one
        self.titles: list[str] = []
        self.micros: list[int | None] = []  # the timestamp, in microseconds since the epoch
        self.days: list[int | None] = []  # the first-appearance date's ordinal
        self.entities = array("i")  # every article's entity codes, one after another
        self.ends = array("q")  # where each article's codes end in ``entities``
        self._order: np.ndarray | None = None

    def add(self, page_id: int, qid: str | None, title: str, timestamp: datetime | None, entities: Iterable[int],
            first_seen: date | None = None) -> None:
        """One more article; ``entities`` are codes of :attr:`codes`, and its own QID among them is dropped."""
        own = NO_QID if qid is None else self.codes.code(qid)
        self.page_ids.append(page_id)
        self.qids.append(own)
        self.titles.append(title)
        self.micros.append(None if timestamp is None else (timestamp - EPOCH) // MICROSECOND)
        self.days.append(None if first_seen is None else first_seen.toordinal())
        self.entities.extend(code for code in entities if code != own)
        self.ends.append(len(self.entities))
        self._order = None

    def __len__(self) -> int:
        return len(self.page_ids)

    @overload
    def __getitem__(self, position: int) -> Article: ...

    @overload
    def __getitem__(self, position: slice) -> list[Article]: ...

    def __getitem__(self, position: int | slice) -> Article | list[Article]:
        if isinstance(position, slice):
            return [self[at] for at in range(*position.indices(len(self)))]
        if not -len(self) <= position < len(self):
            raise IndexError(f"article {position} of {len(self)} ({self.lang})")
        position %= len(self)
        start = self.ends[position - 1] if position else 0
        qid, micros, day = self.qids[position], self.micros[position], self.days[position]
        return Article(self.lang, self.page_ids[position], None if qid == NO_QID else self.codes.qids[qid],
                       self.titles[position], None if micros is None else EPOCH + micros * MICROSECOND,
                       self.codes.qids_of(self.entities[start:self.ends[position]]),
                       None if day is None else date.fromordinal(day))

    def __iter__(self) -> Iterator[Article]:
        return (self[position] for position in range(len(self)))

    def find(self, page_id: int) -> Article | None:
        """The article with this page id, if there is one."""
        if self._order is None:
            self._order = np.argsort(np.frombuffer(self.page_ids, dtype=np.int64), kind="stable")
        ids = np.frombuffer(self.page_ids, dtype=np.int64)
        at = int(np.searchsorted(ids, page_id, sorter=self._order))
        if at < len(ids) and ids[self._order[at]] == page_id:
            return self[int(self._order[at])]
        return None

    def side(self) -> Side:
        """The articles as one side of the entity join: arrays, each article's evidence its entities and own QID."""
        qids = np.frombuffer(self.qids, dtype=np.int32)
        ends = np.frombuffer(self.ends, dtype=np.int64)
        counts = np.diff(ends, prepend=0)
        positions = np.arange(len(self), dtype=np.int32)
        with_qid = np.flatnonzero(qids != NO_QID).astype(np.int32)
        return Side(self.lang, np.frombuffer(self.page_ids, dtype=np.int64), qids,
                    pa.array(self.days, pa.int64()), pa.array(self.micros, pa.int64()),
                    np.concatenate([np.repeat(positions, counts), with_qid]),
                    np.concatenate([np.frombuffer(self.entities, dtype=np.int32), qids[with_qid]]))

