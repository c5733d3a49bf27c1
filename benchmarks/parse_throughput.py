"""How fast the corpus stage turns dump files into document rows, against what bounds it and against a peer.

Two baselines, measured in the same run so their ratios survive machine load:

* reading and decompressing the very same file, with no parsing — the
  floor any parser pays, so ``vs_decompress`` says how much parsing adds. The
  peer decompresses the way the standard library (and so any plain reader)
  does: ``gzip.open`` / ``bz2.open``. Our readers decompress gzip with ISA-L
  instead, so ``vs_decompress_same_decompressor`` also compares the ingest with
  merely running that faster decompressor (``iter_decompressed_blocks``);
* ``wikiextractor`` (the tool most Wikipedia pipelines use) on the very same
  XML dump with the same number of extraction processes as our parse — so
  ``vs_wikiextractor`` says what our wikitext cleaning costs against the usual
  alternative.

Memory: the peak RSS of a fresh process ingesting each input at its size and
at four times its size (``*_peak_rss_mb``, ``*_rss_growth_4x``), which stays
flat when batches and queues are bounded. Projection: the wall time of the
English dumps on this machine, from the measured throughput (see
:func:`projection` for the assumptions).

Inputs are built in a temporary directory: a synthetic CirrusSearch content
dump in the real bulk format (deterministic seed, size set by ``--scale``),
and complete multistream XML dumps made from the real truncated samples in
``../shared/data/wikipedia-xml`` (one per wiki, since namespace names are
per wiki). Run: ``.venv/bin/python benchmarks/parse_throughput.py``.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import html
import itertools
import lzma
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from _common import Timing, best_of, emit, per_second, say
from tasks import compute
from tasks.dumps.cirrus import iter_cirrus_documents
from tasks.dumps.compression import iter_decompressed_blocks
from tasks.dumps.ingest import ingest_documents, part_ends, plan_units
from tasks.text.languages import all_rules
from tasks.warehouse.db import Warehouse

BENCHMARK = "parse_throughput"
SAMPLES_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wikipedia-xml"
MB = 1_000_000
CIRRUS_TARGET_MB = 30.0  # compressed size of the synthetic CirrusSearch dump at --scale 1
XML_TARGET_MB = 8.0  # uncompressed XML per wiki at --scale 1 (the samples hold 10-19 MB each)
CIRRUS_LANG = "en"  # the synthetic dump's language: only its disambiguation markers matter to the parser
PAGES_PER_STREAM = 100  # what Wikimedia puts in each bz2 stream of a multistream dump
WIKIEXTRACTOR_PROCESSES = 1  # our XML ingest of one dump file is one parse unit, i.e. one process
FINGERPRINT = "benchmark-parse-throughput"


# -- synthetic CirrusSearch dump ------------------------------------------------------------------
# Pseudo-words from syllables, drawn with Zipf frequencies, then recombined
# from a pool of sentences: text that compresses like prose (gzip finds no
# repeats across documents) without copying any real text.
_ONSETS = ("", "b", "br", "c", "ch", "d", "dr", "f", "g", "gr", "h", "j", "k", "kl", "l", "m", "n", "p", "pr",
           "r", "s", "sh", "st", "t", "tr", "v", "w", "z")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "é", "ä", "ø")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "nd", "st", "k", "x")
_SYLLABLES_PER_WORD = (1, 1, 2, 2, 2, 3, 3, 4)
_TEMPLATES = ("Cite web", "Cite book", "Reflist", "Short description", "Authority control", "Citation needed",
              "Coord", "Main", "See also", "Commons category", "Lang", "Convert")
_DISAMBIGUATION_SHARE = 0.01
_EPOCH = datetime(2024, 6, 1, tzinfo=timezone.utc)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)
                   for _ in range(rng.choice(_SYLLABLES_PER_WORD)))


@dataclass(frozen=True)
class Lexicon:
    """Words in Zipf rank order with their cumulative weights, a sentence pool and category names."""

    words: list[str]
    cum_weights: list[float]
    sentences: list[tuple[str, str, str]]  # (plain text, wikitext with one link, the linked word)
    categories: list[str]

    def some_words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=k)


def _sentence(rng: random.Random, tokens: list[str]) -> tuple[str, str, str]:
    """A sentence as plain text and as wikitext with one word linked, plus that word as a link target."""
    if rng.random() < 0.15:
        tokens.insert(rng.randrange(len(tokens)), str(rng.randint(1500, 2024)))
    tokens[0] = tokens[0].capitalize()
    link = rng.randrange(len(tokens))
    linked = tokens.copy()
    linked[link] = f"[[{tokens[link]}]]"
    return " ".join(tokens) + ".", " ".join(linked) + ".", tokens[link].capitalize()


def make_lexicon(rng: random.Random, vocabulary: int = 40_000, pool: int = 40_000) -> Lexicon:
    distinct: set[str] = set()
    while len(distinct) < vocabulary:
        distinct.add(_word(rng))
    words = sorted(distinct)  # set order follows the hash seed; sorting keeps the dump deterministic
    rng.shuffle(words)
    ranked = Lexicon(words, list(itertools.accumulate(1.0 / rank for rank in range(1, vocabulary + 1))), [], [])
    sentences = [_sentence(rng, ranked.some_words(rng, rng.randint(4, 28))) for _ in range(pool)]
    categories = [" ".join(w.capitalize() for w in ranked.some_words(rng, rng.randint(1, 3))) for _ in range(2_000)]
    return Lexicon(words, ranked.cum_weights, sentences, categories)


def _title(rng: random.Random, lexicon: Lexicon) -> str:
    return " ".join(rng.choice(lexicon.words).capitalize() for _ in range(rng.randint(1, 3)))


def _cirrus_document(rng: random.Random, lexicon: Lexicon, page_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One action line and its document, shaped like a CirrusSearch content-index source."""
    title = _title(rng, lexicon)
    sentence_count = min(1_500, max(2, round(rng.lognormvariate(math.log(16), 1.0))))
    chosen = rng.choices(lexicon.sentences, k=sentence_count)
    paragraphs, headings, start = [], [], 0
    while start < len(chosen):
        size = rng.randint(3, 8)
        paragraphs.append(chosen[start:start + size])
        start += size
    infobox = f"{{{{Infobox {rng.choice(lexicon.words)}\n| name = {title}\n| founded = {rng.randint(1200, 2020)}\n}}}}\n"
    wikitext_parts = [f"{infobox}'''{title}''' "]
    for number, paragraph in enumerate(paragraphs):
        if number and rng.random() < 0.3:
            heading = " ".join(lexicon.some_words(rng, rng.randint(1, 3))).capitalize()
            headings.append(heading)
            wikitext_parts.append(f"\n== {heading} ==\n")
        wikitext_parts.append(" ".join(sentence[1] for sentence in paragraph) + "\n\n")
    disambiguation = rng.random() < _DISAMBIGUATION_SHARE
    categories = rng.choices(lexicon.categories, k=rng.randint(0, 8)) + (["Disambiguation pages"] if disambiguation else [])
    templates = [f"Template:{name}" for name in rng.sample(_TEMPLATES, rng.randint(0, 6))]
    wikitext_parts.extend(f"[[Category:{category}]]\n" for category in categories)
    text = " ".join(sentence[0] for sentence in chosen)
    edited = _EPOCH - timedelta(seconds=rng.randrange(400_000_000))
    created = edited - timedelta(seconds=rng.randrange(400_000_000))
    document: dict[str, Any] = {
        "version": rng.randrange(1_000_000_000, 1_300_000_000),
        "wiki": f"{CIRRUS_LANG}wiki",
        "namespace": 0,
        "namespace_text": "",
        "title": title,
        "timestamp": edited.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "create_timestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "redirect": [{"namespace": 0, "title": _title(rng, lexicon)} for _ in range(min(20, int(rng.expovariate(1.2))))],
        "incoming_links": int(rng.lognormvariate(2.0, 1.5)),
        "category": categories,
        "external_link": [f"https://example.org/{rng.choice(lexicon.words)}" for _ in range(rng.randint(0, 3))],
        "outgoing_link": sorted({sentence[2] for sentence in chosen}),
        "template": templates,
        "text": text,
        "source_text": "".join(wikitext_parts),
        "text_bytes": len(text.encode()),
        "content_model": "wikitext",
        "language": CIRRUS_LANG,
        "heading": headings,
        "opening_text": " ".join(sentence[0] for sentence in paragraphs[0]),
        "auxiliary_text": [" ".join(lexicon.some_words(rng, rng.randint(3, 9)))] if rng.random() < 0.4 else [],
        "popularity_score": rng.random() * 1e-5,
    }
    if rng.random() < 0.97:  # a few pages are not linked to Wikidata yet
        document["wikibase_item"] = f"Q{rng.randint(1, 120_000_000)}"
    return {"index": {"_type": "page", "_id": str(page_id)}}, document


def write_cirrus_dump(path: Path, target_bytes: int, seed: int) -> int:
    """Write a gzipped bulk-format content dump of about ``target_bytes`` compressed; returns its document count."""
    rng = random.Random(seed)
    lexicon = make_lexicon(rng)
    documents = 0
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as stream:
        while raw.tell() < target_bytes:
            lines = []
            for _ in range(200):
                documents += 1
                action, document = _cirrus_document(rng, lexicon, page_id=documents * 7 + 3)
                lines += [orjson.dumps(action), orjson.dumps(document)]
            stream.write(b"\n".join(lines) + b"\n")
    return documents


# -- XML dumps from the real samples ------------------------------------------------------------
_PAGE = re.compile(rb"[ \t]*<page>.*?</page>\n?", re.DOTALL)
_PAGE_ID = re.compile(rb"<id>(\d+)</id>")  # the page's own id comes before its revision's
_TITLE = re.compile(rb"<title>(.*?)</title>", re.DOTALL)


@dataclass(frozen=True)
class XmlInput:
    """A complete multistream dump built from one sample, with its index."""

    wiki: str
    lang: str
    dump: Path
    index: Path
    pages: int


def complete_pages(xml: bytes, source: str) -> tuple[bytes, list[bytes]]:
    """The head (``<mediawiki>`` and ``<siteinfo>``) and every complete ``<page>`` of a truncated dump.

    Page text cannot hold a literal ``</page>`` (XML escapes ``<``), so the
    last one ends the last complete page and the cut-off page after it is dropped.
    """
    first = xml.find(b"<page>")
    last = xml.rfind(b"</page>")
    if first < 0 or last < 0:
        raise SystemExit(f"{source}: no complete <page> element; is this a MediaWiki XML dump?")
    head_end = xml.rfind(b"\n", 0, first) + 1
    return xml[:head_end], [match.group() for match in _PAGE.finditer(xml, head_end, last + len(b"</page>\n"))]


def _with_page_id_shifted(page: bytes, shift: int) -> bytes:
    return _PAGE_ID.sub(lambda match: b"<id>%d</id>" % (int(match.group(1)) + shift), page, count=1)


def _pages_to_size(pages: Sequence[bytes], target_bytes: int) -> Iterator[bytes]:
    """The pages in order, repeated until ``target_bytes``; repeats get fresh page ids, as a real dump would."""
    total = 0
    for copy in itertools.count():
        for page in pages:
            if total >= target_bytes:
                return
            if copy:
                page = _with_page_id_shifted(page, copy * 100_000_000)
            total += len(page)
            yield page


def write_multistream(dump: Path, index: Path, head: bytes, pages: Iterable[bytes]) -> int:
    """Write pages the way Wikimedia does: one bz2 stream for the head, one per 100 pages, one for the end tag.

    ``pages`` is consumed as it comes (a generator keeps a large dump out of memory); returns how many were written.
    """
    index_lines = []
    remaining = iter(pages)
    with open(dump, "wb") as out:
        out.write(bz2.compress(head))
        while group := list(itertools.islice(remaining, PAGES_PER_STREAM)):
            offset = out.tell()
            for page in group:
                page_id = _PAGE_ID.search(page)
                title = _TITLE.search(page)
                assert page_id and title, "complete_pages only returns pages with an id and a title"
                index_lines.append(f"{offset}:{int(page_id.group(1))}:{html.unescape(title.group(1).decode())}")
            out.write(bz2.compress(b"".join(group)))
        out.write(bz2.compress(b"</mediawiki>\n"))
    index.write_bytes(bz2.compress(("\n".join(index_lines) + "\n").encode()))
    return len(index_lines)


def build_xml_input(sample: Path, lang: str, workdir: Path, target_bytes: int) -> XmlInput:
    """A complete dump of ``target_bytes`` of pages from a truncated ``.xml.xz`` sample."""
    workdir.mkdir(parents=True, exist_ok=True)
    wiki = sample.name.split("-", 1)[0]
    head, pages = complete_pages(lzma.decompress(sample.read_bytes()), str(sample))
    chosen = list(_pages_to_size(pages, target_bytes))
    dump = workdir / f"{wiki}-20230501-pages-articles-multistream.xml.bz2"
    index = workdir / f"{wiki}-20230501-pages-articles-multistream-index.txt.bz2"
    write_multistream(dump, index, head, chosen)
    return XmlInput(wiki, lang, dump, index, len(chosen))


def find_samples(directory: Path, wikis: Sequence[str] | None) -> list[tuple[Path, str]]:
    """(sample, language) pairs for the wikis asked for (all known ones by default)."""
    lang_of = {rule.wiki: rule.lang for rule in all_rules().values()}
    found = []
    for sample in sorted(directory.glob("*.xml.xz")):
        wiki = sample.name.split("-", 1)[0]
        if wikis is not None and wiki not in wikis:
            continue
        if wiki not in lang_of:
            say(f"skipping {sample.name}: {wiki} has no row in tasks/text/languages.csv")
            continue
        found.append((sample, lang_of[wiki]))
    missing = sorted(set(wikis or ()) - {sample.name.split("-", 1)[0] for sample, _ in found})
    if missing:
        say(f"no usable sample in {directory} for: {', '.join(missing)}")
    return found


# -- what is timed -------------------------------------------------------------------------------
_STDLIB_OPENERS: dict[str, Callable[[Path], Any]] = {".gz": gzip.open, ".bz2": bz2.open}


def read_decompressed_stdlib(paths: Sequence[Path]) -> int:
    """Decompress and read every byte with the standard library, as a plain reader would; returns the byte count."""
    total = 0
    for path in paths:
        with _STDLIB_OPENERS[path.suffix](path) as stream:
            while block := stream.read1(1 << 20):
                total += len(block)
    return total


def read_decompressed(paths: Sequence[Path]) -> int:
    """Decompress and read every byte, through the same reader the parsers use; returns the byte count."""
    return sum(len(block) for path in paths for block in iter_decompressed_blocks(path))


def parse_cirrus(path: Path) -> int:
    """Parse only (no Parquet, no warehouse); returns the row count."""
    return sum(1 for _ in iter_cirrus_documents(path, CIRRUS_LANG))


@contextmanager
def compute_mode(mode: str) -> Iterator[None]:
    """Choose where ``tasks.compute`` runs work, for the duration of one variant."""
    previous = os.environ.get(compute.MODE_ENV)
    os.environ[compute.MODE_ENV] = mode
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(compute.MODE_ENV, None)
        else:
            os.environ[compute.MODE_ENV] = previous


@dataclass(frozen=True)
class Ingested:
    rows: int
    issues: int


def ingest(wh: Warehouse, cells: Sequence[tuple[str, dict[str, Path]]]) -> Ingested:
    """The corpus stage's parse-and-store step for each (language, files) cell."""
    outputs = [ingest_documents(wh, lang, files, FINGERPRINT, max_docs=None) for lang, files in cells]
    return Ingested(sum(output.rows for output in outputs), sum(len(output.issues) for output in outputs))


def check_complete(label: str, ingested: Ingested) -> None:
    """Issues mean some input was skipped, which would make the throughput look better than it is."""
    if ingested.issues:
        say(f"  WARNING: {label} reported {ingested.issues} issue(s); its input was not parsed in full")


WIKIEXTRACTOR = [sys.executable, "-m", "wikiextractor.WikiExtractor"]


def _run_checked(command: list[str], what: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"wikiextractor failed on {what} (exit {done.returncode}):\n{done.stderr[-2000:]}")


def run_wikiextractor(dumps: Sequence[Path], output: Path) -> None:
    """wikiextractor on each dump, plain text without template expansion (our parser expands none either)."""
    for dump in dumps:
        _run_checked([*WIKIEXTRACTOR, str(dump), "--no-templates", "--json", "-q",
                      "--processes", str(WIKIEXTRACTOR_PROCESSES), "-o", str(output / dump.name)], str(dump))


def start_wikiextractor() -> None:
    """Interpreter start and imports only: what each launch costs before it reads a byte."""
    _run_checked([*WIKIEXTRACTOR, "--version"], "--version")


def count_lines(directory: Path) -> int:
    """Documents wikiextractor wrote (one JSON object per line)."""
    total = 0
    for path in directory.rglob("*"):
        if path.is_file():
            with open(path, "rb") as stream:
                total += sum(1 for _ in stream)
    return total


def fresh_directory(path: Path) -> Callable[[], None]:
    """Untimed set-up for runs that need an empty output directory."""
    def reset() -> None:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    return reset


# -- memory --------------------------------------------------------------------------------------
_PEAK_RSS_SCRIPT = """
import json, os, resource, sys, tempfile
from pathlib import Path
os.environ["BABELBENCH_COMPUTE"] = "inline"
from tasks.dumps.ingest import ingest_documents
from tasks.warehouse.db import Warehouse
lang, files = sys.argv[1], {role: Path(path) for role, path in json.loads(sys.argv[2]).items()}
with tempfile.TemporaryDirectory() as home, Warehouse(Path(home)) as wh:
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ingest_documents(wh, lang, files, "benchmark-rss", max_docs=None)
print(json.dumps([baseline, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]))
"""


@dataclass(frozen=True)
class PeakRss:
    """Peak resident set of a fresh process ingesting one input, and the same after imports only (MB)."""

    peak_mb: float
    baseline_mb: float


def peak_rss(lang: str, files: dict[str, Path]) -> PeakRss:
    """Ingest in a process of its own (inline, so every byte parsed is in it) and read its peak RSS."""
    command = [sys.executable, "-c", _PEAK_RSS_SCRIPT, lang, orjson.dumps({k: str(v) for k, v in files.items()}).decode()]
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise SystemExit(f"peak-RSS run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    baseline_kb, peak_kb = orjson.loads(done.stdout.strip().splitlines()[-1])
    return PeakRss(peak_kb / 1024, baseline_kb / 1024)  # ru_maxrss is in KiB on Linux


def rss_metrics(prefix: str, small: PeakRss, large: PeakRss) -> dict[str, float]:
    say(f"  {prefix} peak RSS: {small.peak_mb:.0f} MB at 1x, {large.peak_mb:.0f} MB at 4x "
        f"(imports alone {small.baseline_mb:.0f} MB): growth {large.peak_mb / small.peak_mb:.2f}x")
    return {f"{prefix}_peak_rss_mb": round(small.peak_mb, 1), f"{prefix}_peak_rss_4x_mb": round(large.peak_mb, 1),
            f"{prefix}_import_rss_mb": round(small.baseline_mb, 1),
            f"{prefix}_rss_growth_4x": round(large.peak_mb / small.peak_mb, 3)}


def concatenated(path: Path, copies: int, target: Path) -> Path:
    """``copies`` gzip members of ``path`` in one file: a larger dump of the same content (gzip allows members)."""
    data = path.read_bytes()
    target.write_bytes(data * copies)
    return target


# -- reporting -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Throughput:
    """One variant's best time over an input of known compressed size and document count.

    ``cpu_seconds`` is kept only where it is complete (see ``_common.Timing``).
    """

    seconds: float
    compressed_bytes: int
    documents: int
    cpu_seconds: float | None = None

    @property
    def mb_s(self) -> float:
        return per_second(self.compressed_bytes / MB, self.seconds)

    @property
    def docs_s(self) -> float:
        return per_second(self.documents, self.seconds)

    def metrics(self, prefix: str) -> dict[str, float]:
        values = {f"{prefix}_s": round(self.seconds, 3), f"{prefix}_mb_s": round(self.mb_s, 3),
                  f"{prefix}_docs_s": round(self.docs_s, 1)}
        if self.cpu_seconds is not None:
            values[f"{prefix}_cpu_s"] = round(self.cpu_seconds, 3)
        return values


@dataclass(frozen=True)
class Runs:
    """How often each variant runs: ``warmup`` untimed runs, then ``repeat`` timed ones of which the fastest counts."""

    repeat: int
    warmup: int


def measure(label: str, runs: Runs, compressed_bytes: int, documents: int, run: Callable[[], Any], *,
            prepare: Callable[[], None] | None = None, cpu: bool = False) -> tuple[Throughput, Timing[Any]]:
    """Best-of-``runs.repeat`` throughput of ``run``; ``cpu`` when all its work happens in this process or its
    children."""
    timing = best_of(label, runs.repeat, run, prepare=prepare, warmup=runs.warmup)
    throughput = Throughput(timing.seconds, compressed_bytes, documents, timing.cpu_seconds if cpu else None)
    cores = f", {timing.cpu_seconds / timing.seconds:.1f} cores busy" if cpu and timing.seconds > 0 else ""
    say(f"  {label}: best {timing.seconds:.2f} s = {throughput.mb_s:.2f} MB/s compressed, {throughput.docs_s:,.0f} docs/s{cores}")
    return throughput, timing


def ratio(numerator: Throughput, denominator: Throughput) -> float:
    return round(numerator.mb_s / denominator.mb_s, 4)


# -- projection ----------------------------------------------------------------------------------
ENWIKI_CIRRUS_MB = 40_000.0  # English CirrusSearch content dump, gzip
ENWIKI_XML_MB = 22_000.0  # English pages-articles-multistream, bz2
DASK_WORKER_CAP = 4  # tasks.compute starts at most this many local workers


def _hours(megabytes: float, mb_s: float) -> float:
    return round(megabytes / mb_s / 3600, 2) if mb_s > 0 else math.inf


def projection(metrics: dict[str, Any], cores: int) -> dict[str, float]:
    """Estimated wall time of the English dumps on ``cores`` cores, from this run's compressed MB/s.

    Assumptions: the real dumps parse at the speed measured here per
    compressed MB (the synthetic CirrusSearch dump compresses like prose, the
    XML samples are real articles; enwiki has a larger share of redirects,
    which are cheaper, so the XML figure errs on the slow side). A CirrusSearch
    file is a single gzip stream, split into one part per worker that each
    decompress it up to their own end (``tasks.dumps.ingest.part_ends``): on
    n workers it takes the one-process time (measured inline here) times the
    first part's share, ``SKIP_COST / (1 - (1 - SKIP_COST) ** n)``, which
    falls ever more slowly with n. A multistream dump is cut into ~64 MB units, independent,
    so XML time divides by the workers (one per core, at most
    ``DASK_WORKER_CAP`` on a local cluster), each parsing at the one-process
    rate measured here; disk and shared-memory bandwidth are assumed not to bind.
    """
    values: dict[str, float] = {"projection_cores": cores}
    workers = min(cores, DASK_WORKER_CAP)
    cirrus_core_h = _hours(ENWIKI_CIRRUS_MB, metrics["cirrus_ingest_inline_mb_s"])
    cirrus_h = round(cirrus_core_h * part_ends(workers)[0], 2)
    cirrus_next_h = round(cirrus_core_h * part_ends(min(cores + 1, DASK_WORKER_CAP))[0], 2)
    values |= {"projected_enwiki_cirrus_h": cirrus_h, "projected_enwiki_cirrus_h_saved_per_added_core":
               round(cirrus_h - cirrus_next_h, 2)}
    say(f"projection, enwiki CirrusSearch ({ENWIKI_CIRRUS_MB / 1000:.0f} GB gz): {cirrus_h:.1f} h on {cores} core(s) "
        f"({cirrus_core_h:.1f} h in one process); an added core saves {cirrus_h - cirrus_next_h:.1f} h")
    if "xml_ingest_inline_mb_s" in metrics:
        rate = metrics["xml_ingest_inline_mb_s"]
        xml_h = _hours(ENWIKI_XML_MB, rate * workers)
        next_h = _hours(ENWIKI_XML_MB, rate * min(cores + 1, DASK_WORKER_CAP))
        values |= {"projected_enwiki_xml_h": xml_h, "projected_enwiki_xml_h_saved_per_added_core": round(xml_h - next_h, 2),
                   "projected_enwiki_xml_core_h": _hours(ENWIKI_XML_MB, rate)}
        say(f"projection, enwiki XML multistream ({ENWIKI_XML_MB / 1000:.0f} GB bz2): {xml_h:.1f} h on {cores} core(s) "
            f"({values['projected_enwiki_xml_core_h']:.1f} core-hours); an added core saves {xml_h - next_h:.1f} h "
            f"(up to {DASK_WORKER_CAP} local workers; beyond that, point DASK_SCHEDULER_ADDRESS at a larger cluster)")
    return values


# -- the run -------------------------------------------------------------------------------------
def bench_cirrus(wh: Warehouse, workdir: Path, scale: float, runs: Runs, seed: int) -> tuple[dict[str, Any], dict[str, float]]:
    dump = workdir / f"{CIRRUS_LANG}wiki-20240601-cirrussearch-content.json.gz"
    say(f"CirrusSearch: generating a ~{CIRRUS_TARGET_MB * scale:.1f} MB dump (seed {seed}) ...")
    started = time.perf_counter()
    documents = write_cirrus_dump(dump, int(CIRRUS_TARGET_MB * scale * MB), seed)
    size = dump.stat().st_size
    say(f"  {dump.name}: {size / MB:.1f} MB, {documents:,} documents, made in {time.perf_counter() - started:.1f} s")
    cells = [(CIRRUS_LANG, {"cirrus": dump})]

    decompress, read = measure("cirrus decompress+read (stdlib gzip)", runs, size, documents,
                               lambda: read_decompressed_stdlib([dump]))
    fast_decompress, _ = measure("cirrus decompress+read (our reader, ISA-L)", runs, size, documents,
                                 lambda: read_decompressed([dump]))
    parse, parsed = measure("cirrus parse only", runs, size, documents, lambda: parse_cirrus(dump))
    with compute_mode("inline"):
        inline, ingested = measure("cirrus ingest inline", runs, size, documents, lambda: ingest(wh, cells), cpu=True)
    check_complete("cirrus ingest", ingested.result)
    with compute_mode("dask"):
        started = time.perf_counter()
        compute.map_parallel(abs, [0])  # start the shared cluster outside the timing: a flow pays this once
        startup = time.perf_counter() - started
        parts = len(plan_units(CIRRUS_LANG, {"cirrus": dump}, parallelism=compute.parallelism()))
        say(f"  dask local cluster ready in {startup:.1f} s; the file is parsed in {parts} part(s)")
        dask, _ = measure("cirrus ingest dask", runs, size, documents, lambda: ingest(wh, cells))
    larger = concatenated(dump, 4, workdir / f"{CIRRUS_LANG}wiki-20240602-cirrussearch-content.json.gz")
    memory = rss_metrics("cirrus", peak_rss(CIRRUS_LANG, {"cirrus": dump}), peak_rss(CIRRUS_LANG, {"cirrus": larger}))
    larger.unlink()
    metrics: dict[str, Any] = {
        "cirrus_compressed_mb": round(size / MB, 3),
        "cirrus_uncompressed_mb": round(read.result / MB, 3),
        "cirrus_docs": documents,
        "cirrus_rows": parsed.result,  # articles plus one row per redirect
        "cirrus_issues": ingested.result.issues,
        "dask_startup_s": round(startup, 3),
        "cirrus_dask_parts": parts,
        **decompress.metrics("cirrus_decompress"),
        **fast_decompress.metrics("cirrus_decompress_isal"),
        **parse.metrics("cirrus_parse"),
        **inline.metrics("cirrus_ingest_inline"),
        **dask.metrics("cirrus_ingest_dask"),
        **memory,
    }
    ratios = {
        "vs_decompress": ratio(dask, decompress),
        "vs_decompress_same_decompressor": ratio(dask, fast_decompress),
        "cirrus_inline_vs_decompress": ratio(inline, decompress),
        "cirrus_parse_vs_decompress": ratio(parse, decompress),
        "cirrus_dask_vs_inline": ratio(dask, inline),
    }
    return metrics, ratios


def bench_xml(
    wh: Warehouse, workdir: Path, samples: Sequence[tuple[Path, str]], scale: float, runs: Runs,
) -> tuple[dict[str, Any], dict[str, float]]:
    say(f"XML: building complete multistream dumps of ~{XML_TARGET_MB * scale:.1f} MB (uncompressed) per wiki ...")
    inputs = []
    for sample, lang in samples:
        built = build_xml_input(sample, lang, workdir, int(XML_TARGET_MB * scale * MB))
        say(f"  {built.dump.name}: {built.dump.stat().st_size / MB:.1f} MB, {built.pages:,} pages from {sample.name}")
        inputs.append(built)
    dumps = [built.dump for built in inputs]
    size = sum(dump.stat().st_size for dump in dumps)
    pages = sum(built.pages for built in inputs)
    cells = [(built.lang, {"xml": built.dump, "xml_index": built.index}) for built in inputs]
    output = workdir / "wikiextractor"

    decompress, read = measure("xml decompress+read (stdlib bz2)", runs, size, pages, lambda: read_decompressed_stdlib(dumps))
    with compute_mode("inline"):
        ours, ingested = measure("xml ingest inline", runs, size, pages, lambda: ingest(wh, cells), cpu=True)
    check_complete("xml ingest", ingested.result)
    peer, _ = measure(f"wikiextractor --processes {WIKIEXTRACTOR_PROCESSES}", runs, size, pages,
                      lambda: run_wikiextractor(dumps, output), prepare=fresh_directory(output), cpu=True)
    startup = best_of("wikiextractor start-up", runs.repeat, start_wikiextractor, warmup=runs.warmup).seconds
    (sample, lang), first = samples[0], inputs[0]
    larger = build_xml_input(sample, lang, workdir / "larger", 4 * int(XML_TARGET_MB * scale * MB))
    memory = rss_metrics(f"xml_{first.wiki}", peak_rss(lang, {"xml": first.dump, "xml_index": first.index}),
                         peak_rss(lang, {"xml": larger.dump, "xml_index": larger.index}))
    # On a real dump the launch is negligible; on these few MB it is not, so the main ratio leaves it out.
    peer_working = Throughput(max(peer.seconds - startup * len(dumps), 1e-9), size, pages)
    metrics: dict[str, Any] = {
        "xml_wikis": ",".join(built.wiki for built in inputs),
        "xml_compressed_mb": round(size / MB, 3),
        "xml_uncompressed_mb": round(read.result / MB, 3),
        "xml_pages": pages,
        "xml_rows": ingested.result.rows,  # main-namespace pages, redirects included
        "xml_issues": ingested.result.issues,
        "wikiextractor_docs": count_lines(output),  # main-namespace pages, redirects skipped
        "wikiextractor_processes": WIKIEXTRACTOR_PROCESSES,
        **decompress.metrics("xml_decompress"),
        **ours.metrics("xml_ingest_inline"),
        **peer.metrics("wikiextractor"),
        "wikiextractor_startup_s": round(startup, 3),
        **peer_working.metrics("wikiextractor_without_startup"),
        **memory,
    }
    ratios = {
        "vs_wikiextractor": ratio(ours, peer_working),
        "vs_wikiextractor_with_startup": ratio(ours, peer),
        "xml_vs_decompress": ratio(ours, decompress),
    }
    return metrics, ratios


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help=f"input size factor: {CIRRUS_TARGET_MB:g} MB CirrusSearch (compressed) and "
                             f"{XML_TARGET_MB:g} MB XML per wiki (uncompressed) at 1")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per variant; the fastest counts")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs per variant before the timed ones (worker imports, first-use caches)")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the synthetic CirrusSearch dump")
    parser.add_argument("--samples", type=Path, default=SAMPLES_DIR, help="folder of the truncated *.xml.xz samples")
    parser.add_argument("--wikis", help="comma-separated wikis to take XML samples from (default: all found)")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1 or args.warmup < 0:
        parser.error("--scale must be positive, --repeat at least 1 and --warmup not negative")

    started = time.perf_counter()
    runs = Runs(args.repeat, args.warmup)
    metrics: dict[str, Any] = {"scale": args.scale, "repeat": args.repeat, "warmup": args.warmup, "cpu_count": os.cpu_count()}
    ratios: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="babelbench-parse-") as tmp:
        workdir = Path(tmp)
        with Warehouse(workdir / "home") as wh:
            try:
                cirrus_metrics, cirrus_ratios = bench_cirrus(wh, workdir, args.scale, runs, args.seed)
            finally:
                compute.shutdown()
            metrics |= cirrus_metrics
            ratios |= cirrus_ratios
            samples = find_samples(args.samples, args.wikis.split(",") if args.wikis else None) if args.samples.is_dir() else []
            if samples:
                xml_metrics, xml_ratios = bench_xml(wh, workdir, samples, args.scale, runs)
                metrics |= xml_metrics
                ratios |= xml_ratios
            else:
                say(f"XML: skipped, no usable *.xml.xz samples in {args.samples} (see ../shared/data/wikipedia-xml/README.md)")
                ratios |= {"vs_wikiextractor": None, "vs_wikiextractor_with_startup": None, "xml_vs_decompress": None}
    metrics |= projection(metrics, os.cpu_count() or 1)
    metrics["total_s"] = round(time.perf_counter() - started, 1)
    say(f"done in {metrics['total_s']:.0f} s; ratios: " + ", ".join(f"{k} = {v}" for k, v in ratios.items()))
    emit(BENCHMARK, metrics, ratios)


if __name__ == "__main__":
    main()
