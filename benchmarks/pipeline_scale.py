"""How the whole pipeline grows with the size of a Wikipedia: time, memory and disk per stage, and what that means
for English (7M articles) and for a 139-language rebuild.

For each size N (articles per language, ``--sizes``) a synthetic dump of ``--langs`` is written in the formats the
real ingest reads, and the real ``babelbench`` commands run on it, each a fresh process on a fresh home:

1. ``corpus ingest --kind cirrus`` (stages download, documents, appearance, sitelinks);
2. ``clir build`` (index, retrieval — the title-query mining with its Jenks labels — and qrels, which projects the
   labels through Wikidata and cuts the splits);
3. ``qa build --recipe eclektic``: the stage ``qa-candidates`` (every article with its filter outcome, the sample
   marked);
4. ``qa build --recipe xrag``: ``xrag-pairs`` (entity-sharing article pairs, within the pivot language and across
   languages, the window and ``max_pairs`` applied);
5. ``corpus ingest --kind xml`` on a second fresh home (multistream XML with its index; QIDs from ``page_props``).

Both QA builds name as generator a model registered (untimed) with an endpoint that answers nothing, and
``--max-calls 0``: the first model stage (``qa-generate``, ``xrag-related``) fails its model check at once, before
any call and without loading a model, and the model stages are left out of the results. What cannot be reached
without a model: the items (``qa-generate``, ``xrag-related``, ``xrag-questions``), the
pre-screen, ``translate``, and so ``distractors`` (their BM25 distractor retrieval reads the translated items) and
``instances``; then inference and judging. Their cost is model calls, which this benchmark does not model.

Per command: wall seconds, the peak RSS and the peak PSS of its process tree (psutil, sampled every ``--poll``
seconds: the command, its Dask workers and helpers; not the shared Prefect API server, which was started before
timing; PSS counts a page the processes share, such as a mapped index, once in all), the largest single process's
peak (``wait4``'s ``ru_maxrss``), and the size of the home after it. Per stage, from the warehouse's
``artifacts`` table: the span of its cells (first start to last finish; cells of different languages may overlap),
their summed seconds, the peaks of the tree's RSS and PSS samples taken within that span, and the bytes of the lake
tables and home folders the catalog says it writes.

The growth exponent k of each stage (time ∝ N^k, least squares on logs over the sizes) then extrapolates to
``--enwiki`` articles and to a ``--rebuild-langs`` rebuild; see :func:`rebuild_sizes` and :func:`makespan` for the
assumptions. Run: ``.venv/bin/python benchmarks/pipeline_scale.py --sizes 2000,5000,10000`` (the default sizes,
100k/300k/1M articles per language, take hours and tens of GB).
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import psutil

from _common import emit, say
from parse_throughput import Lexicon, make_lexicon, write_multistream
from tasks.catalog import stages
from tasks.warehouse.db import Warehouse

BENCHMARK = "pipeline_scale"
REPO = Path(__file__).resolve().parents[1]
DUMP_DATE = "20260101"
MB = 1_000_000
SHARED_TOPICS = 0.5  # share of each language's articles on topics every language has (one Wikidata item)
MEDIAN_WORDS, WORDS_SIGMA, MAX_WORDS = 300, 1.0, 20_000  # log-normal article lengths: mean ≈ 495 words
WORDS_PER_LINK = 30  # one internal link per this many words (Wikipedia: one per 25-40)
LINK_POPULARITY_SIGMA = 1.5  # log-normal in-link weights: heavy-tailed, without a power law's giant hubs at small N
TITLE_MIN_RANK = 3_000  # title words are content words, not the commonest ones (which every article would mention)
REDIRECTS_PER_ARTICLE = 0.5  # mean of a geometric count
REVISION_SPAN_DAYS = 3 * 365
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
ENWIKI_ARTICLES = 7_000_000
REBUILD_LANGS = 139  # CLIRMatrix's languages
REBUILD_TOTAL = 60_000_000  # about every Wikipedia's articles together, 2024
TARGET_CORES = 16
COLLECTION = "scale"
COMMANDS = ("ingest_cirrus", "clir_build", "qa_eclektic", "qa_xrag", "ingest_xml")
#: A model whose endpoint answers nothing: its check fails before any call, so a QA build stops at its first model
#: stage without loading or calling a model (``--max-calls 0`` as well, should it ever answer).
STOP_MODEL = ("scale-stop", "http://127.0.0.1:9/v1")
#: Stages whose work is model calls: they run (and fail at once) after the stages timed here, and are left out.
MODEL_STAGES = frozenset({"qa-generate", "xrag-related", "xrag-questions", "qa-prescreen"})


# -- the synthetic dump ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Wiki:
    """One language's articles: titles, Wikidata items and revision times in page-id order, and its lexicon."""

    lang: str
    titles: list[str]
    qids: list[str]
    timestamps: list[str]
    lexicon: Lexicon
    link_cdf: np.ndarray  # cumulative in-link weights over the articles

    @property
    def dbname(self) -> str:
        return f"{self.lang}wiki"

    @staticmethod
    def page_id(index: int) -> int:
        return 10 + 3 * index


@dataclass
class Article:
    """One article's plain text, wikitext, links and redirects, drawn from its wiki's lexicon."""

    index: int
    title: str
    text: str
    wikitext: str
    links: list[str]
    redirects: list[str]
    words: int


def _titles(rng: random.Random, words: Sequence[str], count: int) -> list[str]:
    """``count`` distinct titles of one to three content words."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(" ".join(rng.choice(words).capitalize() for _ in range(rng.choice((1, 2, 2, 3)))), None)
    return list(seen)


def make_wiki(lang: str, articles: int, seed: int) -> Wiki:
    """A language's articles: the first ``SHARED_TOPICS`` of them on the topics every language shares (Q1, Q2, …),
    the others on topics of their own, so CLIR finds cross-language pairs and ECLEKTIC finds single-language
    articles."""
    rng = random.Random(f"{seed}:{lang}")
    lexicon = make_lexicon(rng)
    titles = _titles(rng, lexicon.words[TITLE_MIN_RANK:], articles)
    shared = int(articles * SHARED_TOPICS)
    own_base = 10_000_000 * (1 + sum(map(ord, lang)))  # a QID range per language, far from the shared one
    qids = [f"Q{1 + i}" if i < shared else f"Q{own_base + i}" for i in range(articles)]
    stamps = [(EPOCH - timedelta(seconds=rng.randrange(REVISION_SPAN_DAYS * 86_400))).strftime("%Y-%m-%dT%H:%M:%SZ")
              for _ in range(articles)]
    weights = np.random.default_rng(rng.randrange(2**32)).lognormal(0.0, LINK_POPULARITY_SIGMA, articles)
    cdf = np.cumsum(weights)
    return Wiki(lang, titles, qids, stamps, lexicon, cdf / cdf[-1])


def iter_articles(wiki: Wiki, seed: int) -> Iterator[Article]:
    """The articles in page-id order, each the same in the CirrusSearch and the XML dump (same seed)."""
    rng = random.Random(f"{seed}:{wiki.lang}:text")
    np_rng = np.random.default_rng(rng.randrange(2**32))
    sentences = wiki.lexicon.sentences
    for index, title in enumerate(wiki.titles):
        goal = min(MAX_WORDS, max(20, round(rng.lognormvariate(math.log(MEDIAN_WORDS), WORDS_SIGMA))))
        targets = np.searchsorted(wiki.link_cdf, np_rng.random(max(1, goal // WORDS_PER_LINK)))
        links = [wiki.titles[t] for t in targets.tolist() if t != index]
        plain, marked, words, link = [f"{title}."], [f"'''{title}'''."], 1, 0
        while words < goal:
            text, wikitext, _ = rng.choice(sentences)
            words += text.count(" ") + 1
            if link < len(links) and rng.random() < 0.5:  # a link ends the sentence: "… about [[Target]]."
                plain.append(f"{text[:-1]} {links[link]}.")
                marked.append(f"{wikitext[:-1]} [[{links[link]}]].")
                link += 1
            else:
                plain.append(text)
                marked.append(wikitext)
            if rng.random() < 0.02:
                plain.append(f"{title} {text}")  # the subject named again further down
                marked.append(f"{title} {wikitext}")
        redirects = [f"{title} ({n})" for n in range(1, 1 + int(rng.expovariate(1 / REDIRECTS_PER_ARTICLE)))]
        yield Article(index, title, " ".join(plain), " ".join(marked), links[:link], redirects, words)


def write_cirrus(wiki: Wiki, path: Path, seed: int) -> int:
    """The wiki's CirrusSearch content dump (gzipped bulk format); returns the words written."""
    total = 0
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as stream:
        for article in iter_articles(wiki, seed):
            total += article.words
            document = {
                "version": 1_000_000 + article.index, "wiki": wiki.dbname, "namespace": 0, "namespace_text": "",
                "title": article.title, "timestamp": wiki.timestamps[article.index],
                "redirect": [{"namespace": 0, "title": alias} for alias in article.redirects],
                "category": [], "template": [], "outgoing_link": sorted(set(article.links)),
                "text": article.text, "source_text": article.wikitext, "text_bytes": len(article.text),
                "content_model": "wikitext", "language": wiki.lang, "wikibase_item": wiki.qids[article.index],
                "opening_text": article.text[:300], "heading": [], "incoming_links": 0,
            }
            stream.write(orjson.dumps({"index": {"_type": "page", "_id": str(wiki.page_id(article.index))}}) + b"\n"
                         + orjson.dumps(document) + b"\n")
    return total


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _xml_head(wiki: Wiki) -> bytes:
    namespaces = "\n".join(f'      <namespace key="{key}" case="first-letter">{name}</namespace>'
                           for key, name in ((10, "Template"), (14, "Category")))
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="{wiki.lang}">\n'
            f"  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>{wiki.dbname}</dbname>\n"
            f'    <case>first-letter</case>\n    <namespaces>\n      <namespace key="0" case="first-letter" />\n'
            f"{namespaces}\n    </namespaces>\n  </siteinfo>\n").encode()


def _page_xml(page_id: int, title: str, timestamp: str, text: str, redirect: str | None = None) -> bytes:
    redirect_tag = f'    <redirect title="{_xml_escape(redirect)}" />\n' if redirect else ""
    return (f"  <page>\n    <title>{_xml_escape(title)}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n{redirect_tag}"
            f"    <revision>\n      <id>{page_id + 7}</id>\n      <timestamp>{timestamp}</timestamp>\n"
            f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            f'      <text xml:space="preserve">{_xml_escape(text)}</text>\n    </revision>\n  </page>\n').encode()


def _xml_pages(wiki: Wiki, seed: int) -> Iterator[bytes]:
    """Articles, each followed by its redirects (page ids between this article's and the next's)."""
    for article in iter_articles(wiki, seed):
        page_id, stamp = wiki.page_id(article.index), wiki.timestamps[article.index]
        yield _page_xml(page_id, article.title, stamp, article.wikitext)
        for offset, alias in enumerate(article.redirects[:2], start=1):
            yield _page_xml(page_id + offset, alias, stamp, f"#REDIRECT [[{article.title}]]", redirect=article.title)


def write_xml(wiki: Wiki, folder: Path, seed: int) -> int:
    """The multistream XML dump with its index, and the page_props dump that gives its QIDs; returns the pages."""
    prefix = f"{wiki.dbname}-{DUMP_DATE}"
    pages = write_multistream(folder / f"{prefix}-pages-articles-multistream.xml.bz2",
                              folder / f"{prefix}-pages-articles-multistream-index.txt.bz2", _xml_head(wiki),
                              _xml_pages(wiki, seed))
    with gzip.open(folder / f"{prefix}-page_props.sql.gz", "wb", compresslevel=6) as out:
        for start in range(0, len(wiki.qids), 1000):
            rows = ",".join(f"({wiki.page_id(i)},'wikibase_item','{wiki.qids[i]}',NULL)"
                            for i in range(start, min(start + 1000, len(wiki.qids))))
            out.write(f"INSERT INTO `page_props` VALUES {rows};\n".encode())
    return pages


@dataclass(frozen=True)
class Dump:
    cirrus: Path  # folder of the CirrusSearch dumps
    xml: Path  # folder of the XML dumps and page_props
    words: int
    xml_pages: int
    cirrus_mb: float
    xml_mb: float


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _write_one(kind: str, folder: Path, lang: str, articles: int, seed: int) -> int:
    """One language's dump in one format (a process of its own): the words (CirrusSearch) or pages (XML) written."""
    wiki = make_wiki(lang, articles, seed)
    if kind == "cirrus":
        return write_cirrus(wiki, folder / f"{wiki.dbname}-{DUMP_DATE}-cirrussearch-content.json.gz", seed)
    return write_xml(wiki, folder, seed)


def kept_dump(store: Path, langs: Sequence[str], articles: int, seed: int) -> Dump:
    """The dump of ``langs`` at ``articles`` and ``seed`` kept under ``store`` (``--dumps``), written there first if it
    is not: a million articles per language take 25 minutes to write on two cores, and the same arguments always
    write the same dump. ``dump.json``, written last, marks a complete one."""
    folder = store / f"{'-'.join(langs)}-{articles}-{seed}"
    marker = folder / "dump.json"
    if marker.exists():
        kept = orjson.loads(marker.read_bytes())
        return Dump(folder / "cirrus", folder / "xml", kept["words"], kept["xml_pages"],
                    folder_bytes(folder / "cirrus") / MB, folder_bytes(folder / "xml") / MB)
    shutil.rmtree(folder, ignore_errors=True)  # an interrupted write
    dump = write_dump(folder, langs, articles, seed)
    marker.write_bytes(orjson.dumps({"words": dump.words, "xml_pages": dump.xml_pages}))
    return dump


def write_dump(folder: Path, langs: Sequence[str], articles: int, seed: int) -> Dump:
    """Every language in both formats, one process per core: at a million articles a dump takes half an hour to
    write on one. Each file depends on its language and the seed alone, so the dump is the same however many run."""
    cirrus, xml = folder / "cirrus", folder / "xml"
    cirrus.mkdir(parents=True)
    xml.mkdir(parents=True)
    jobs = [(kind, where, lang) for lang in langs for kind, where in (("cirrus", cirrus), ("xml", xml))]
    with ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        counts = list(pool.map(_write_one, *zip(*jobs), [articles] * len(jobs), [seed] * len(jobs)))
    words = sum(count for (kind, _, _), count in zip(jobs, counts) if kind == "cirrus")
    pages = sum(count for (kind, _, _), count in zip(jobs, counts) if kind == "xml")
    return Dump(cirrus, xml, words, pages, folder_bytes(cirrus) / MB, folder_bytes(xml) / MB)


# -- running one command ---------------------------------------------------------------------------------------------
@dataclass
class Sample:
    at: float  # time.time()
    rss: int  # bytes, the whole process tree
    pss: int  # bytes, the tree's proportional set size: a page its processes share (a mapped index) counted once


@dataclass
class CommandRun:
    name: str
    seconds: float
    peak_rss_mb: float
    peak_pss_mb: float
    max_process_rss_mb: float
    home_mb: float
    samples: list[Sample] = field(repr=False)
    output: str = field(repr=False)


def _tree_memory(process: psutil.Process) -> tuple[int, int]:
    """The tree's summed RSS and PSS (``smaps_rollup``): Dask's workers each map the index they search, so RSS
    counts its pages once per worker, PSS once in all."""
    rss = pss = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            memory = member.memory_full_info()
        except psutil.Error:
            continue  # ended between listing and reading
        rss, pss = rss + memory.rss, pss + memory.pss
    return rss, pss


def run_command(name: str, argv: list[str], env: dict[str, str], home: Path, poll: float, *,
                allowed_exit: Sequence[int] = (0,)) -> CommandRun:
    """Run one CLI command, sampling its process tree's RSS; its exit status must be one of ``allowed_exit``."""
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        watched = psutil.Process(child.pid)
        samples: list[Sample] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                try:
                    samples.append(Sample(time.time(), *_tree_memory(watched)))
                except psutil.Error:
                    return
                done.wait(poll)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        output = log.read().decode(errors="replace")
    if child.returncode not in allowed_exit:
        raise SystemExit(f"{name} failed (exit {child.returncode}): {' '.join(argv[2:])}\n{output[-3000:]}")
    peak, peak_pss = max((s.rss for s in samples), default=0), max((s.pss for s in samples), default=0)
    say(f"  {name}: {seconds:.1f} s, peak RSS {peak / MB:.0f} MB, peak PSS {peak_pss / MB:.0f} MB (tree), largest "
        f"process {usage.ru_maxrss * 1024 / MB:.0f} MB")
    return CommandRun(name, seconds, peak / MB, peak_pss / MB, usage.ru_maxrss * 1024 / MB, folder_bytes(home) / MB,
                      samples, output)


# -- per stage, from the warehouse --------------------------------------------------------------------------------
@dataclass
class StageRun:
    command: str
    stage: str
    cells: int
    rows: int  # the rows its cells wrote (artifacts.rows)
    status: str  # "computed", or the statuses seen when not all computed
    span_s: float
    cell_s: float
    peak_rss_mb: float | None
    peak_pss_mb: float | None
    disk_mb: float


def stage_outputs() -> dict[str, tuple[str, ...]]:
    return {stage.name: stage.writes for stage in stages()}


def stage_runs(command: CommandRun, home: Path, after_id: int) -> tuple[list[StageRun], int]:
    """The stages this command ran (artifacts rows past ``after_id``) up to the first model call, with their spans,
    RSS and disk (the Parquet shards their cells registered, and the home folders the catalog says they write)."""
    with Warehouse(home) as wh:
        rows = wh.query("SELECT artifact_id, stage, status, epoch(started_at), epoch(finished_at), seconds, fingerprint, rows"
                        " FROM artifacts WHERE artifact_id > ? ORDER BY artifact_id", [after_id])
        shards = wh.query("SELECT fingerprint, path FROM lake_shards")
    last = max((row[0] for row in rows), default=after_id)
    rows = [row for row in rows if row[1] not in MODEL_STAGES]
    shard_bytes: dict[str, int] = {}
    for fingerprint, path in shards:
        file = home / "lake" / path
        shard_bytes[fingerprint] = shard_bytes.get(fingerprint, 0) + (file.stat().st_size if file.is_file() else 0)
    # artifacts times are naive UTC wall clock (epoch() reads them as UTC); the samples carry time.time()
    grouped: dict[str, list[tuple]] = {}
    for row in rows:
        grouped.setdefault(row[1], []).append(row)
    outputs = stage_outputs()
    found = []
    for stage, cells in grouped.items():
        start, end = min(c[3] for c in cells), max(c[4] for c in cells)
        within = [s for s in command.samples if start - 0.5 <= s.at <= end + 0.5]
        statuses = sorted({c[2] for c in cells})
        disk = sum(shard_bytes.get(c[6], 0) for c in cells)
        disk += sum(folder_bytes(home / out.rstrip("/")) for out in outputs.get(stage, ()) if out.endswith("/"))
        found.append(StageRun(command.name, stage, len(cells), sum(c[7] or 0 for c in cells), "/".join(statuses), end - start,
                              sum(c[5] for c in cells), max(s.rss for s in within) / MB if within else None,
                              max(s.pss for s in within) / MB if within else None, disk / MB))
    return found, last


# -- one size --------------------------------------------------------------------------------------------------------
@dataclass
class SizeResult:
    articles: int
    dump: Dump
    generate_s: float
    commands: list[CommandRun]
    stages: list[StageRun]


def cli(home: Path) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "--home", str(home)]


def run_size(articles: int, langs: Sequence[str], root: Path, env: dict[str, str], args: argparse.Namespace) -> SizeResult:
    say(f"N = {articles:,} articles per language ({', '.join(langs)})")
    started = time.perf_counter()
    dump = kept_dump(args.dumps, langs, articles, args.seed) if args.dumps else \
        write_dump(root / "dump", langs, articles, args.seed)
    generate_s = time.perf_counter() - started
    say(f"  dump written (or found in --dumps) in {generate_s:.1f} s: CirrusSearch {dump.cirrus_mb:.1f} MB, XML {dump.xml_mb:.1f} MB "
        f"({dump.words / len(langs) / articles:.0f} words per article)")
    home, xml_home = root / "home", root / "home-xml"
    lang_list = ",".join(langs)
    budget_stop = ["--max-calls", "0", "--no-prescreen", "--generator", STOP_MODEL[0]]
    run_command("models add (untimed)", [*cli(home), "models", "add", "--name", STOP_MODEL[0], "--backend", "openai",
                                         "--model", "none", "--base-url", STOP_MODEL[1]], env, home, args.poll)
    plan = [
        ("ingest_cirrus", home, [*cli(home), "corpus", "ingest", "--lang", lang_list, "--source", str(dump.cirrus),
                                 "--kind", "cirrus"], (0,)),
        ("clir_build", home, [*cli(home), "clir", "build", "--name", COLLECTION, "--langs", lang_list,
                              "--min-documents", "1"], (0,)),
        # the model stages after the candidates are refused by the budget: the command then exits 1
        ("qa_eclektic", home, [*cli(home), "qa", "build", "--recipe", "eclektic", "--langs", lang_list,
                               *budget_stop], (0, 1)),
        ("qa_xrag", home, [*cli(home), "qa", "build", "--recipe", "xrag", "--langs", lang_list, *budget_stop],
         (0, 1)),
        ("ingest_xml", xml_home, [*cli(xml_home), "corpus", "ingest", "--lang", lang_list, "--source", str(dump.xml),
                                  "--kind", "xml"], (0,)),
    ]
    commands, runs, seen = [], [], {home: 0, xml_home: 0}
    for name, where, argv, allowed in plan:
        if name in args.skip:
            continue
        command = run_command(name, argv, env, where, args.poll, allowed_exit=allowed)
        found, seen[where] = stage_runs(command, where, seen[where])
        commands.append(command)
        runs += found
    shutil.rmtree(root)
    return SizeResult(articles, dump, generate_s, commands, runs)


# -- growth and extrapolation -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Growth:
    """time ≈ exp(intercept) · N^k, fitted over the measured sizes."""

    k: float
    intercept: float

    def seconds(self, articles: float) -> float:
        return math.exp(self.intercept) * articles ** self.k


def fit(sizes: Sequence[int], seconds: Sequence[float]) -> Growth | None:
    """Least squares on logs; None with fewer than two sizes or a time too short to log."""
    points = [(n, s) for n, s in zip(sizes, seconds, strict=True) if s and s > 0]
    if len({n for n, _ in points}) < 2:
        return None
    k, intercept = np.polyfit(np.log([n for n, _ in points]), np.log([s for _, s in points]), 1)
    return Growth(float(k), float(intercept))


def rebuild_sizes(langs: int, largest: int, total: int) -> list[float]:
    """Articles per edition for a rebuild: a Zipf law over the editions' ranks, the largest edition ``largest``
    (English) and the sum ``total``; its exponent is solved for (bisection)."""
    low, high = 0.0, 5.0
    for _ in range(100):
        alpha = (low + high) / 2
        if sum(largest * r ** -alpha for r in range(1, langs + 1)) > total:
            low = alpha
        else:
            high = alpha
    return [largest * r ** -alpha for r in range(1, langs + 1)]


def makespan(jobs: Sequence[float], slots: int) -> float:
    """Longest-first list scheduling of per-language jobs on ``slots`` parallel slots."""
    loads = [0.0] * max(1, slots)
    for job in sorted(jobs, reverse=True):
        heapq.heapreplace(loads, loads[0] + job)
    return max(loads)


# -- report ------------------------------------------------------------------------------------------------------------
def stage_key(run: StageRun) -> str:
    return f"{run.command}.{run.stage}"


def summarise(results: list[SizeResult], langs: Sequence[str], args: argparse.Namespace,
              cpu_count: int) -> tuple[dict[str, Any], dict[str, float | None], list[dict[str, Any]]]:
    sizes = [r.articles for r in results]
    rows: list[dict[str, Any]] = []
    for result in results:
        base = {"benchmark": BENCHMARK, "articles": result.articles, "langs": list(langs)}
        rows.append({**base, "kind": "dump", "seconds": round(result.generate_s, 2), "cirrus_mb": round(result.dump.cirrus_mb, 1),
                     "xml_mb": round(result.dump.xml_mb, 1), "words": result.dump.words, "xml_pages": result.dump.xml_pages})
        for command in result.commands:
            rows.append({**base, "kind": "command", "command": command.name, "seconds": round(command.seconds, 2),
                         "peak_rss_mb": round(command.peak_rss_mb, 1), "peak_pss_mb": round(command.peak_pss_mb, 1),
                         "max_process_rss_mb": round(command.max_process_rss_mb, 1), "home_mb": round(command.home_mb, 1)})
        for run in result.stages:
            rows.append({**base, "kind": "stage", "command": run.command, "stage": run.stage, "cells": run.cells, "rows": run.rows,
                         "status": run.status, "seconds": round(run.span_s, 2), "cell_seconds": round(run.cell_s, 2),
                         "peak_rss_mb": None if run.peak_rss_mb is None else round(run.peak_rss_mb, 1),
                         "peak_pss_mb": None if run.peak_pss_mb is None else round(run.peak_pss_mb, 1),
                         "disk_mb": round(run.disk_mb, 2)})
    series: dict[str, list[float]] = {}
    for result in results:
        for command in result.commands:
            series.setdefault(f"command.{command.name}", []).append(command.seconds)
        for run in result.stages:
            series.setdefault(stage_key(run), []).append(run.span_s)
    growth = {key: fit(sizes, values) for key, values in series.items() if len(values) == len(sizes)}
    rebuild = rebuild_sizes(args.rebuild_langs, args.enwiki, args.rebuild_total)
    metrics: dict[str, Any] = {"sizes": ",".join(map(str, sizes)), "langs": ",".join(langs), "cpu_count": cpu_count,
                               "target_cores": args.cores, "enwiki_articles": args.enwiki,
                               "rebuild_langs": args.rebuild_langs, "rebuild_total_articles": args.rebuild_total}
    ratios: dict[str, float | None] = {}
    per_lang = len(langs)
    totals = {"enwiki_h": 0.0, "rebuild_h": 0.0, f"rebuild_{args.cores}core_h": 0.0}
    for key, model in growth.items():
        if key.startswith("command.") or model is None:
            continue
        ratios[f"k.{key}"] = round(model.k, 3)
        # a stage measured over len(langs) languages at N each: one language's share is 1/len(langs) of its time
        one = lambda n, model=model: model.seconds(n) / per_lang  # noqa: E731
        enwiki = one(args.enwiki)
        serial = sum(one(n) for n in rebuild)
        parallel = makespan([one(n) for n in rebuild], args.cores // cpu_count)
        metrics[f"{key}.enwiki_h"] = round(enwiki / 3600, 3)
        metrics[f"{key}.rebuild_h"] = round(serial / 3600, 2)
        metrics[f"{key}.rebuild_{args.cores}core_h"] = round(parallel / 3600, 2)
        totals["enwiki_h"] += enwiki / 3600
        totals["rebuild_h"] += serial / 3600
        totals[f"rebuild_{args.cores}core_h"] += parallel / 3600
    for key, model in growth.items():
        if key.startswith("command.") and model is not None:
            ratios[f"k.{key}"] = round(model.k, 3)
    metrics.update({f"total.{key}": round(value, 2) for key, value in totals.items()})
    return metrics, ratios, rows


def markdown_table(results: list[SizeResult], ratios: dict[str, float | None]) -> str:
    sizes = [r.articles for r in results]
    header = "| stage | " + " | ".join(f"N={n:,}: s / peak RSS MB / peak PSS MB / disk MB" for n in sizes) + " | k (time ∝ N^k) |"
    lines = [header, "|---|" + "---|" * len(sizes) + "---|"]
    keys: dict[str, None] = {}
    for result in results:
        for command in result.commands:
            keys.setdefault(f"command.{command.name}", None)
            for run in result.stages:
                if run.command == command.name:
                    keys.setdefault(stage_key(run), None)
    for key in keys:
        cells = []
        for result in results:
            if key.startswith("command."):
                found = [c for c in result.commands if f"command.{c.name}" == key]
                cells.append(f"**{found[0].seconds:.1f}** / {found[0].peak_rss_mb:.0f} / {found[0].peak_pss_mb:.0f} / "
                             f"{found[0].home_mb:.0f} (home)"
                             if found else "—")
            else:
                hit = [r for r in result.stages if stage_key(r) == key]
                if hit:
                    rss = "—" if hit[0].peak_rss_mb is None else f"{hit[0].peak_rss_mb:.0f}"
                    pss = "—" if hit[0].peak_pss_mb is None else f"{hit[0].peak_pss_mb:.0f}"
                    cells.append(f"{hit[0].span_s:.1f} / {rss} / {pss} / {hit[0].disk_mb:.1f}")
                else:
                    cells.append("—")
        k = ratios.get(f"k.{key}")
        label = f"**{key.removeprefix('command.')}** (command)" if key.startswith("command.") else f"  {key.split('.', 1)[1]}"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {'—' if k is None else f'{k:.2f}'} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,300000,1000000", help="articles per language, comma-separated")
    parser.add_argument("--langs", default="en,de", help="languages of the synthetic dump (at least two)")
    parser.add_argument("--skip", default="", help="commands to leave out, comma-separated: " + ", ".join(COMMANDS)
                        + " (the CLIR and QA builds read the CirrusSearch ingest)")
    parser.add_argument("--out", type=Path, help="also write every JSON line (per size, command and stage) here")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--dumps", type=Path, help="keep the synthetic dumps here and reuse them in later runs")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between RSS samples of a command's processes")
    parser.add_argument("--enwiki", type=int, default=ENWIKI_ARTICLES, help="articles of the largest edition")
    parser.add_argument("--rebuild-langs", type=int, default=REBUILD_LANGS)
    parser.add_argument("--rebuild-total", type=int, default=REBUILD_TOTAL, help="articles of all rebuilt editions")
    parser.add_argument("--cores", type=int, default=TARGET_CORES, help="cores of the machine extrapolated to")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    if args.skip - set(COMMANDS) or ("ingest_cirrus" in args.skip and set(COMMANDS[1:4]) - args.skip):
        parser.error(f"--skip takes {', '.join(COMMANDS)}; without ingest_cirrus, skip clir_build and the QA builds too")
    sizes = sorted({int(size) for size in args.sizes.split(",") if size.strip()})
    langs = [lang.strip() for lang in args.langs.split(",") if lang.strip()]
    if len(langs) < 2 or not sizes or sizes[0] < 100:
        parser.error("--langs needs at least two languages and --sizes sizes of at least 100 articles")
    cpu_count = os.cpu_count() or 1
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="babelbench-scale-") as tmp:
        root = Path(tmp)
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_API", "BABELBENCH_"))}
        env |= {"PREFECT_HOME": str(root / "prefect"), "DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PYTHONPATH": str(REPO)}
        try:
            say("warm-up (untimed): the shared Prefect API and the imports, on a 200-article dump")
            warm = run_size(200, langs[:2], root / "warm-up", env, args)
            say(f"  warm-up took {sum(c.seconds for c in warm.commands):.0f} s")
            for size in sizes:
                results.append(run_size(size, langs, root / f"n{size}", env, args))
        finally:
            subprocess.run([*cli(root / "warm-up"), "server", "stop"], env=env, cwd=REPO, capture_output=True)
    metrics, ratios, rows = summarise(results, langs, args, cpu_count)
    metrics["total_s"] = round(time.perf_counter() - started, 1)
    say("")
    say(markdown_table(results, ratios))
    say("")
    if len(results) < 2:
        say("no extrapolation: fitting each stage's k takes two sizes or more")
    else:
        say(f"extrapolated (sum of the stages, each from its own k): English ({args.enwiki:,} articles) "
            f"{metrics['total.enwiki_h']:.1f} h on {cpu_count} cores; a {args.rebuild_langs}-language rebuild "
            f"{metrics['total.rebuild_h']:.1f} h on {cpu_count} cores, "
            f"{metrics[f'total.rebuild_{args.cores}core_h']:.1f} h on {args.cores}")
    lines = [orjson.dumps(row).decode() for row in rows]
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    for line in lines:
        print(line)
    emit(BENCHMARK, metrics, ratios)


if __name__ == "__main__":
    main()
