"""ECLEKTIC items: facts that only one language's Wikipedia has, asked as one question in that language.

Candidates are the articles of a language whose Wikidata item has no
sitelink to any other chosen language's wiki — the paper leaves the
equivalence test open; sitelinks are the test here, and the languages found
linked are stored per article in ``qa_candidates`` so the check can be
audited.  An article without a QID cannot be checked and is not eligible.
The check can only see the languages whose sitelinks (or QID-carrying
documents) are in the warehouse: a chosen language that was never ingested,
or was ingested without QIDs, would make every article look local.  So a
cell is refused (``ConfigError``, before anything is written) unless every
other chosen language has QID coverage, rather than guessing that an
unchecked language has no equivalent; the languages checked are stored per
article (``checked_langs``) and named in the stage message.

The context is the article's first sentences (split by the language's rules);
the generator writes one ``Question: … Answer: …`` pair from it, in the
article's language with the English keywords kept.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import ConfigError
from tasks.index.corpus import articles_sql
from tasks.llm import BudgetLedger, LLMClient, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import parse_question_answer
from tasks.qa.sampling import seeded_order
from tasks.qa.window import Window, window_columns
from tasks.stage import StageOutput
from tasks.text.languages import rule_for
from tasks.text.sentences import split_sentences
from tasks.warehouse.db import Warehouse, insert_rows
from tasks.warehouse.records import ItemRecord, insert_records

log = logging.getLogger(__name__)
#: the recipe these items are of
RECIPE = "eclektic"

TEMPLATE = "eclektic_qa"
PRIMED = "Question:"
# The model carrying on the few-shot pattern after its answer: nothing of it is kept, so stop paying for it.
STOP = ("\n\n", "\nQuestion:", "\nPassage:")


class EclekticConfig(BaseModel):
    """The ECLEKTIC construction choices; defaults follow ``docs/protocols/eclektic.md``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_chars: int = Field(200, ge=0, description="Shortest article text kept (the paper: 200 characters).")
    page_views: str | None = Field(
        None,
        description=(
            "A Wikimedia pageviews file (space-separated `domain_code page_title count_views ...`, plain or .gz); "
            "when given, articles below `min_page_views` are not eligible. Domain codes `xx`, `xx.m`, "
            "`xx.wikipedia` and `xx.m.wikipedia` all count for language xx."
        ),
    )
    min_page_views: int = Field(100, ge=0, description="The paper's popularity floor, over the file's window.")
    per_lang: int = Field(100, ge=1, description="Articles sampled per language among the eligible (the paper: 100).")
    sample_seed: int = Field(0, description="Seed of that sample.")
    context_sentences: int = Field(10, ge=1, description="Sentences of the article used as context (the paper: 10).")
    max_tokens: int = Field(96, ge=8, description="Tokens allowed for the question and answer.")
    window: Window | None = Field(
        None, description="Live build: only articles that first appeared within SINCE[:UNTIL] (dump dates, inclusive) "
                          "are candidates; None: every article.")


def read_page_views(path: Path, langs: Iterable[str]) -> dict[tuple[str, str], int]:
    """(lang, title) → views summed over the file's lines and the desktop and mobile sites."""
    wanted = set(langs)
    views: dict[tuple[str, str], int] = defaultdict(int)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                fields = line.split(" ")
                if len(fields) < 3:
                    raise ConfigError(f"{path} line {number}: expected `domain_code page_title count_views ...`")
                lang = fields[0].split(".")[0]
                if lang not in wanted or fields[0].removeprefix(lang) not in ("", ".m", ".wikipedia", ".m.wikipedia"):
                    continue
                try:
                    count = int(fields[2])
                except ValueError:
                    raise ConfigError(f"{path} line {number}: count_views {fields[2]!r} is not a number") from None
                views[(lang, fields[1].replace("_", " "))] += count
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the page-view file ({exc.strerror})") from exc
    return dict(views)


_page_views_lock = threading.Lock()


@lru_cache(maxsize=1)  # one build's file at a time: it can be large
def _page_views_of(path: str, modified_ns: int, langs: tuple[str, ...]) -> dict[tuple[str, str], int]:
    return read_page_views(Path(path), langs)


def page_views_for(path: Path, langs: Iterable[str]) -> dict[tuple[str, str], int]:
    """:func:`read_page_views` of a build's languages, read once for all its language cells (which run in
    threads of one process) rather than once per cell: a month of page views is gigabytes."""
    try:
        modified_ns = path.stat().st_mtime_ns
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the page-view file ({exc.strerror})") from exc
    with _page_views_lock:
        return _page_views_of(str(path), modified_ns, tuple(sorted(set(langs))))


def require_qid_coverage(wh: Warehouse, scope: str, langs: Iterable[str]) -> None:
    """Refuse (naming ``scope`` and the languages) unless every one of ``langs`` has sitelinks or documents
    with a QID in the warehouse: without them its equivalents cannot be seen, and every article would look local."""
    missing = [lang for (lang,) in wh.query(
        "SELECT l.lang FROM unnest(?::VARCHAR[]) AS l(lang)"
        " WHERE NOT EXISTS (SELECT 1 FROM sitelinks s WHERE s.lang = l.lang)"
        " AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.lang = l.lang AND d.qid IS NOT NULL) ORDER BY l.lang",
        [sorted(set(langs))],
    )]
    if missing:
        raise ConfigError(
            f"ECLEKTIC {scope}: no sitelinks or QIDs in the warehouse for the chosen language(s) {', '.join(missing)},"
            " so no article can be shown to have no equivalent there; run"
            f" `babelbench corpus ingest --lang {','.join(missing)}` with QIDs"
            " (--sitelinks auto|cirrus|page_props|wikidata, not none)"
        )


def select_candidates(
    wh: Warehouse, benchmark: str, lang: str, langs: list[str], config: EclekticConfig, fp: str
) -> StageOutput:
    """Record every article of ``lang`` with its filter outcomes; mark the seeded sample of the eligible.

    Refused with a :class:`ConfigError`, before anything is written, when another chosen language has no
    sitelinks and no documents with a QID in the warehouse: its equivalents could not be seen.
    """
    others = sorted({other for other in langs if other != lang})
    require_qid_coverage(wh, f"{benchmark} [{lang}]", others)
    rows = wh.query(
        f"SELECT a.page_id, a.qid, a.title, a.chars,"
        f" coalesce(list_sort(list_distinct(list(s.lang) FILTER (s.lang IS NOT NULL))), []),"
        f" any_value(dd.first_dump), any_value(dd.on_or_before)"
        f" FROM ({articles_sql('page_id, qid, title, length(text) AS chars')}) a"
        f" LEFT JOIN document_dates dd ON dd.lang = ? AND dd.page_id = a.page_id"
        f" LEFT JOIN (SELECT DISTINCT qid, lang FROM sitelinks WHERE list_contains(?, lang)"
        f"            UNION SELECT DISTINCT qid, lang FROM documents WHERE list_contains(?, lang) AND qid IS NOT NULL) s"
        f" ON s.qid = a.qid GROUP BY ALL ORDER BY a.page_id",
        [lang, lang, others, others],
    )
    views = page_views_for(Path(config.page_views), langs) if config.page_views else None
    records = []
    for page_id, qid, title, chars, linked, first, on_or_before in rows:
        page_views = views.get((lang, title), 0) if views is not None else None
        reason = (config.window and config.window.outside(first, on_or_before)) or _ineligible(
            qid, chars, page_views, linked, config)
        records.append([benchmark, lang, page_id, qid, title, chars, page_views, linked, reason is None, reason, False, fp,
                        others])
    eligible = [r for r in records if r[8]]
    for record in seeded_order(eligible, config.sample_seed, key=lambda r: str(r[2]))[: config.per_lang]:
        record[10] = True
    with wh.transaction() as cur:
        cur.execute("DELETE FROM qa_candidates WHERE benchmark = ? AND lang = ?", [benchmark, lang])
        insert_rows(cur, "qa_candidates", records)
    selected = sum(r[10] for r in records)
    checked = ", ".join(others) or "no other language"
    return StageOutput(rows=len(records),
                       message=f"{len(eligible)} eligible of {len(records)} articles; {selected} selected; checked against {checked}")


def _ineligible(qid: str | None, chars: int, views: int | None, linked: list[str], config: EclekticConfig) -> str | None:
    if qid is None:
        return "no Wikidata QID: cannot check for equivalents in the other languages"
    if linked:
        return f"has an equivalent in {', '.join(linked)}"
    if chars < config.min_chars:
        return f"{chars} characters < min_chars {config.min_chars}"
    if views is not None and views < config.min_page_views:
        return f"{views} page views < min_page_views {config.min_page_views}"
    return None


def context_of(text: str, lang: str, sentences: int) -> str:
    """The article's first ``sentences`` sentences, joined as its script writes them."""
    joiner = "" if rule_for(lang).needs_segmentation else " "
    return joiner.join(split_sentences(text, lang)[:sentences])


def generate_items(
    wh: Warehouse, client: LLMClient, benchmark: str, lang: str, generator: str, config: EclekticConfig, fp: str,
    *, budget: BudgetLedger | None = None, stage: str = "eclektic-qa",
) -> StageOutput:
    """One QA pair per selected candidate of ``lang``; every candidate becomes a ``qa_items`` row with a status."""
    # The texts of the selected few are found by a filter on their page ids, not by a join with the candidates: the
    # planner, blind to how few are selected, would build the join's hash table over every article's text.
    selected = wh.query("SELECT page_id, title FROM qa_candidates WHERE benchmark = ? AND lang = ? AND selected"
                        " ORDER BY page_id", [benchmark, lang])
    texts = dict(wh.query("SELECT page_id, text FROM documents WHERE lang = ? AND list_contains(?, page_id)",
                          [lang, [page_id for page_id, _ in selected]]))
    candidates = [(page_id, title, texts[page_id]) for page_id, title in selected if page_id in texts]
    spec = client.registry.get(generator)
    language = rule_for(lang).name
    contexts = [context_of(text, lang, config.context_sentences) for _, _, text in candidates]
    requests = [
        prompt_request(spec, TEMPLATE, max_tokens=config.max_tokens, stop=STOP, language=language, context=context)
        for context in contexts
    ]
    results = client.run_sync(generator, requests, stage=stage, budget=budget)
    rows = []
    for (page_id, title, _), context, result in zip(candidates, contexts, results):
        outcome = item_outcome(result, lambda text: parse_question_answer(text, primed=PRIMED if spec.mode == "completion" else ""))
        question, answer = outcome.value if outcome.value else (None, None)
        documents = json.dumps([{"lang": lang, "page_id": page_id, "title": title}], ensure_ascii=False)
        since, until = window_columns(config.window)
        rows.append(ItemRecord(benchmark, f"{lang}:{page_id}", RECIPE, lang, generator, fp, question=question,
                               answer=answer, context=context, documents=documents, status=outcome.status,
                               reason=outcome.reason, request_hash=result.request_hash, window_since=since,
                               window_until=until))
    with wh.transaction() as cur:
        cur.execute("DELETE FROM qa_items WHERE benchmark = ? AND recipe = ? AND lang = ?", [benchmark, RECIPE, lang])
        insert_records(cur, "qa_items", rows)
    ok = sum(row.status == "ok" for row in rows)
    return StageOutput(rows=len(rows), message=f"{ok} of {len(rows)} items parsed")
