"""MIRACL-style data as a MIRAGE benchmark: topics, judged passages (qrels) and the passage corpus.

MIRAGE-BENCH asks each judged query with its human-judged passages, relevant and not (the "oracle"
retrieval set), shuffled.  MIRACL's own layout is found anywhere under ``--source``; only judged passages
are kept from the streamed corpus; one instance per judged query and language, setting ``rag``, shuffled
by a seed from the query.  A query without judgements is counted, not imported; a judged passage missing
from the corpus is an error.

See ``docs/arena.md``, "Importing MIRACL".
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tasks.errors import ConfigError
from tasks.imports.common import DatasetLayout, chosen_langs, langs_text, once, write_benchmark
from tasks.json_lines import iter_json_lines
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord

SETTING = "rag"

RECIPE = "mirage"

@dataclass(frozen=True)
class LanguageFiles:
    topics: Path
    qrels: Path
    corpus: tuple[Path, ...]


def find_files(source: Path, split: str) -> dict[str, LanguageFiles]:
    """Per language, its topics, qrels and corpus files under ``source``; a language missing a part is an error."""
    topics = _by_lang(source, "topics", split)
    qrels = _by_lang(source, "qrels", split)
    corpora: dict[str, list[Path]] = defaultdict(list)
    for directory in (d for d in source.rglob("*corpus*") if d.is_dir()):
        lang = directory.name.rsplit("-", 1)[-1]
        corpora[lang] += sorted(p for p in directory.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    if not topics:
        raise ConfigError(f"{source}: no topics.*-<lang>-{split}.tsv file (MIRACL's layout; see `babelbench import"
                          " miracl --help`)")
    found = {}
    for lang, path in sorted(topics.items()):
        if lang not in qrels:
            raise ConfigError(f"{source}: topics for {lang} ({path.name}) but no qrels.*-{lang}-{split}.tsv")
        if not corpora.get(lang):
            raise ConfigError(f"{source}: topics for {lang} but no corpus directory '…corpus…-{lang}' with .jsonl(.gz)"
                              " files")
        found[lang] = LanguageFiles(path, qrels[lang], tuple(corpora[lang]))
    return found


def _by_lang(source: Path, kind: str, split: str) -> dict[str, Path]:
    pattern = re.compile(rf"{kind}\..*-([a-z]{{2,3}}(?:[_-][a-z]+)?)-{re.escape(split)}\.tsv$")
    found = {}
    for path in sorted(source.rglob(f"{kind}.*.tsv")):
        match = pattern.match(path.name)
        if match:
            found[match.group(1)] = path
    return found


def read_topics(path: Path) -> dict[str, str]:
    """query id → query text; a query id twice is an error (which text would be the query?)."""
    topics: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ConfigError(f"{path} line {number}: expected 'query_id<TAB>query'")
        query_id = parts[0].strip()
        once(lines, query_id, number, path, f"query id {query_id}")
        topics[query_id] = parts[1].strip()
    return topics


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id → {docid: relevance} from a TREC qrels file; a (query, docid) pair judged twice is an error
    (even with the same relevance: the file is not the one its producer meant, and a later line would win)."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    lines: dict[tuple[str, str], int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
            raise ConfigError(f"{path} line {number}: expected 'query_id Q0 docid relevance' (relevance an integer)")
        once(lines, (parts[0], parts[2]), number, path, f"query {parts[0]} judges passage {parts[2]}")
        qrels[parts[0]][parts[2]] = int(parts[3])
    return dict(qrels)


def read_passages(files: tuple[Path, ...], wanted: set[str]) -> dict[str, dict[str, str]]:
    """The ``wanted`` passages (docid → {title, text}), streamed from the corpus files."""
    passages: dict[str, dict[str, str]] = {}
    for path in files:
        for number, record in iter_json_lines(path, "passage"):
            docid = record.get("docid")
            if not isinstance(docid, str) or not isinstance(record.get("text"), str):
                raise ConfigError(f"{path} line {number}: a passage has a string docid and text")
            if docid in wanted:
                passages[docid] = {"title": str(record.get("title") or ""), "text": record["text"]}
    return passages


def write(wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str, split: str = "dev") -> StageOutput:
    """Every judged query of the chosen languages of ``split``, with its judged passages (see the module notes)."""
    if not source.is_dir():
        raise ConfigError(f"{source}: MIRACL data is a directory (topics, qrels and corpus files)")
    files = find_files(source, split)
    chosen = chosen_langs(list(files), langs, source)
    instances, unjudged = [], 0
    for lang in chosen:
        topics, qrels = read_topics(files[lang].topics), read_qrels(files[lang].qrels)
        unknown = sorted(set(qrels) - set(topics))
        if unknown:
            raise ConfigError(f"{files[lang].qrels}: judgements for queries not in {files[lang].topics.name}:"
                              f" {', '.join(unknown[:3])}")
        wanted = {docid for judged in qrels.values() for docid in judged}
        passages = read_passages(files[lang].corpus, wanted)
        absent = sorted(wanted - set(passages))
        if absent:
            raise ConfigError(f"{lang}: {len(absent)} judged passage(s) are not in the corpus files, e.g."
                              f" {', '.join(absent[:3])} (is the corpus complete?)")
        for query_id, query in topics.items():
            if query_id not in qrels:
                unjudged += 1
                continue
            documents = [_document(docid, lang, passages[docid], relevance)
                         for docid, relevance in sorted(qrels[query_id].items())]
            random.Random(_seed(lang, query_id)).shuffle(documents)
            instances.append(InstanceRecord(name, f"{query_id}|{SETTING}|{lang}", f"{lang}:{query_id}", RECIPE, SETTING,
                                            lang, query, "", lang, json.dumps(documents, ensure_ascii=False),
                                            _seed(lang, query_id), fp))
    created = write_benchmark(wh, name, RECIPE, source, fp, instances)
    skipped = f"; {unjudged} queries without judgements skipped" if unjudged else ""
    return StageOutput(rows=len(instances), message=f"{len(instances)} queries in {langs_text(created, chosen)}{skipped}")


def _document(docid: str, lang: str, passage: dict[str, str], relevance: int) -> dict[str, object]:
    page = docid.split("#", 1)[0]
    return {"doc_id": docid, "lang": lang, "page_id": int(page) if page.isdigit() else None,
            "title": passage["title"], "text": passage["text"], "role": "support" if relevance > 0 else "distractor"}


def _seed(lang: str, query_id: str) -> int:
    """A stable 63-bit seed per query (Python's hash() of a string changes between processes)."""
    return int.from_bytes(hashlib.sha256(f"{lang}:{query_id}".encode()).digest()[:8], "big") >> 1


IMPORTER = DatasetLayout(RECIPE, write, default_name="mirage", options=("split",))
