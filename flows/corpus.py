"""Corpus flow: dump files → ``documents`` and ``sitelinks``, one cell per language."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.catalog import descendants, scope
from tasks.dumps import DocKind
from tasks.settings import resolve_home
from tasks.stages import (
    DumpQuery,
    SitelinkChoice,
    appearance_stage,
    collect_outcomes,
    documents_stage,
    download_stage,
    finish_run,
    flow_session,
    sitelinks_stage,
)
from tasks.text import WikiLang, rule_for
from tasks.tracking import tracked_run


class CorpusParams(BaseModel):
    """Parameters of a corpus build (rendered as a form in the Prefect UI)."""

    langs: list[WikiLang] = Field(description="Language codes, e.g. ['en', 'ja']; each is one cell of every stage.")
    source: str = Field("wikimedia", description="'wikimedia', a mirror URL (http(s)://, file://), a directory or one file.")
    date: str | None = Field(None, description="Dump date YYYYMMDD; default: the latest complete dump.")
    kind: DocKind | None = Field(None, description="cirrus or xml; default cirrus for mirrors, inferred for local files.")
    max_docs: int | None = Field(None, ge=1, description="Keep only the first N documents per language (a sample).")
    sitelinks: SitelinkChoice = Field("auto", description="Where QIDs come from; auto = CirrusSearch, else page_props.")
    home: str | None = Field(None, description="babelbench home (warehouse); default $BABELBENCH_HOME or ./.babelbench.")
    force: list[str] = Field(default_factory=list, description="Stages to recompute (with their descendants).")
    progress: bool = Field(True, description="Show download progress bars.")


@flow(name="corpus", log_prints=True)
def corpus_flow(params: CorpusParams) -> list[dict]:
    """Download, parse and link one Wikipedia corpus per language into the warehouse."""
    home = str(resolve_home(params.home))
    force = frozenset(descendants(scope("corpus"), params.force))
    wikis = {lang: rule_for(lang).wiki for lang in params.langs}
    with flow_session(home) as wh, tracked_run(wh, "corpus", params, flow_run.get_id(), logs=False) as run:
        wikidata = None
        if params.sitelinks == "wikidata":
            query = DumpQuery(source=params.source, wiki="wikidatawiki", kind="wikidata", date=params.date)
            wikidata = download_stage.submit(home, "wikidata", query, force, run.run_id, params.progress)
        futures = {}
        for lang, wiki in wikis.items():
            query = DumpQuery(source=params.source, wiki=wiki, kind=params.kind, date=params.date,
                              page_props=params.sitelinks in {"auto", "page_props"})
            download = download_stage.submit(home, lang, query, force, run.run_id, params.progress)
            documents = documents_stage.submit(home, lang, wiki, download, params.max_docs, force, run.run_id)
            appearance = appearance_stage.submit(home, lang, documents, download, force, run.run_id)
            sitelinks = sitelinks_stage.submit(home, lang, wiki, params.sitelinks, documents, download, wikidata,
                                               force, run.run_id)
            futures[lang] = {"download": download, "documents": documents, "appearance": appearance,
                            "sitelinks": sitelinks}
        if wikidata is not None:
            futures["wikidata"] = {"download": wikidata}
        return finish_run(run, "corpus", collect_outcomes(futures))
