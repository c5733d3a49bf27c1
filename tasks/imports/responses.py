"""Responses made elsewhere (a vLLM batch job, another harness) stored as a model's responses to a benchmark.

JSON lines ``{"instance_id", "text"}`` (optionally ``"answer"``, ``"citations"``), read by inference's own
readers so every later stage treats the rows like called ones.  The whole file is checked first; the rows
replace the model's responses in the cells the file touches, and an instance of those cells without a line
is a ``call_failed`` row, never a smaller denominator.  The name must not be a registry model: ``eval`` only
records the imported rows' digest (:func:`imported_inference`) and never calls or overwrites them.

See ``docs/evaluation.md``, "Bring your own responses".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from pathlib import Path

import msgspec

from tasks.catalog import RESPONSES_IMPORT
from tasks.errors import ConfigError
from tasks.imports.common import file_digest, unique_lines
from tasks.inference.reading import citations
from tasks.inference.respond import read_answer, stored_language
from tasks.json_lines import read_typed_lines
from tasks.llm.parsing import Parsed
from tasks.stage import ReadFields, Stage, StageOutput, StageRef, rows_digest, run_stage
from tasks.warehouse.db import Warehouse

#: one cell per (benchmark, model): the same file over the same instances again is a cache hit
#: the ``template`` of an imported response row: this prefix and the file's name
IMPORTED = "import:"
COLUMNS = ("benchmark", "instance_id", "model", "setting", "lang", "status", "reason", "raw_text", "answer",
           "citations", "template", "fingerprint", "language_status", "detected_lang", "target_prob", "english_prob",
           "switched_share")
CELL = "benchmark = ? AND setting = ? AND lang = ? AND model = ?"


class ResponseLine(msgspec.Struct):
    """One line of a responses file (see the module notes)."""

    instance_id: str
    text: str
    answer: str | None = None
    citations: list[str] | None = None


def read_responses(path: Path) -> list[tuple[int, ResponseLine]]:
    """(line number, response) of every line; a line that is not one, or an instance given twice, names the line."""
    lines = read_typed_lines(path, ResponseLine, "response (instance_id, text, optional answer and citations)")
    if not lines:
        raise ConfigError(f"{path}: no responses")
    return list(unique_lines(lines, lambda line: line.instance_id, path, "instance").values())


def import_responses(wh: Warehouse, benchmark: str, model: str, path: Path, registry_names: Collection[str], *,
                     force: bool = False, run_id: str | None = None) -> StageRef:
    """Store ``path``'s responses as ``model``'s to ``benchmark`` (a cell of :data:`RESPONSES_IMPORT`)."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    if model in registry_names:
        raise ConfigError(f"{model!r} is a model of the registry: give imported responses a name of their own"
                          f" (e.g. {model}-imported), so that `eval` never mixes called and imported answers")
    if not wh.scalar("SELECT count(*) FROM qa_benchmarks WHERE benchmark = ?", [benchmark]):
        raise ConfigError(f"no benchmark {benchmark!r}; build or import it first")
    read = ReadFields(values={"source": file_digest(path), "benchmark": benchmark, "model": model,
                              "instances": rows_digest(wh, "SELECT instance_id, setting, lang, documents FROM instances"
                                                           " WHERE benchmark = ? ORDER BY ALL", [benchmark])})
    return run_stage(wh, RESPONSES_IMPORT, f"{benchmark}/{model}", read, {},
                     lambda fp: _write(wh, benchmark, model, path, fp), force=force, run_id=run_id)


def _write(wh: Warehouse, benchmark: str, model: str, path: Path, fp: str) -> StageOutput:
    lines = read_responses(path)
    instances = {row["instance_id"]: row for row in wh.query_dicts(
        "SELECT instance_id, recipe, setting, lang, documents FROM instances WHERE benchmark = ?", [benchmark])}
    for number, line in lines:
        if line.instance_id not in instances:
            raise ConfigError(f"{path} line {number}: benchmark {benchmark!r} has no instance {line.instance_id!r}")
    given = {line.instance_id: line for _, line in lines}
    cells = sorted({(instances[i]["setting"], instances[i]["lang"]) for i in given})
    template = f"{IMPORTED}{path.name}"
    rows = [_row(benchmark, model, instance, given.get(instance["instance_id"]), template, fp, path.name)
            for instance in sorted(instances.values(), key=lambda row: row["instance_id"])
            if (instance["setting"], instance["lang"]) in cells]
    with wh.transaction() as cur:
        for setting, lang in cells:
            cur.execute(f"DELETE FROM responses WHERE {CELL}", [benchmark, setting, lang, model])
        cur.executemany(f"INSERT INTO responses ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                        rows)
    counts = Counter(row[COLUMNS.index("status")] for row in rows)
    return StageOutput(rows=len(rows), message=f"{model}: {len(rows)} responses in {len(cells)} cells of {benchmark}"
                                               f" from {path.name}: {dict(sorted(counts.items()))}")


def _row(benchmark: str, model: str, instance: dict, line: ResponseLine | None, template: str, fp: str,
         source: str) -> list:
    """One ``responses`` row (in :data:`COLUMNS` order), read as inference reads a reply."""
    head = [benchmark, instance["instance_id"], model, instance["setting"], instance["lang"]]
    if line is None:
        return [*head, "call_failed", f"no line for this instance in the imported {source}", None, None, [], template,
                fp, None, None, None, None, None]
    outcome = Parsed("ok", line.answer) if line.answer else read_answer(line.text)
    cited = line.citations if line.citations is not None else citations(line.text)
    language = stored_language(instance, line.text, outcome.value) if outcome.status == "ok" else None
    return [*head, outcome.status, outcome.reason, line.text, outcome.value, cited, template, fp,
            *((language.status, language.detected, language.target_prob, language.english_prob,
               language.switched_share) if language else (None,) * 5)]


def imported_inference(wh: Warehouse, stage: Stage, cell: str, benchmark: str, setting: str, lang: str, model: str,
                       run_id: str) -> StageRef | None:
    """The inference cell of imported responses, or None when the model's responses to the benchmark are not.

    Nothing is called and nothing is written: the cell records the digest of
    the imported rows, so the judging and scoring cells that read it recompute
    when the responses are imported again from another file.  A cell the
    imported file did not cover is an error that says so (the model has no
    endpoint to ask).
    """
    params = [benchmark, setting, lang, model]
    imported = wh.scalar(f"SELECT count(*) FROM responses WHERE {CELL} AND starts_with(template, ?)",
                         [*params, IMPORTED])
    if not imported:
        if wh.scalar("SELECT count(*) FROM responses WHERE benchmark = ? AND model = ? AND starts_with(template, ?)",
                     [benchmark, model, IMPORTED]):
            raise ConfigError(f"{model!r} has imported responses to {benchmark!r}, but none in setting {setting!r},"
                              f" language {lang!r}: import them (`babelbench import responses`) or leave the cell"
                              " out (--langs, --settings)")
        return None
    read = ReadFields(values={"imported": rows_digest(
        wh, f"SELECT instance_id, status, answer, citations, template FROM responses WHERE {CELL} ORDER BY ALL",
        params)})
    return run_stage(wh, stage, cell, read, {},
                     lambda fp: StageOutput(rows=imported, message=f"{imported} imported responses of {model}:"
                                                                   " not called"), run_id=run_id)
