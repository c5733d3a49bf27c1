"""A benchmark as an MLflow evaluation dataset, one per version of its instances.

Each instance is a record: its inputs (instance id, setting, language, the
question, the ids of the documents shown) and its expectations (the gold
answer; MKQA's gold answers with their aliases).  The instance id is among
the inputs because MLflow merges records whose inputs are equal, and two
instances may ask the same question.

MLflow 3.17 versions evaluation datasets only on Databricks, so a version
is a dataset of its own, named ``<benchmark>@<fingerprint>``: the
fingerprint is the digest of the records, so a rebuilt benchmark — another
question, another gold answer, another document shown — is a new dataset
and an unchanged one is found by name and reused.  A dataset is tagged
complete once every record is in; one left incomplete by an interrupted
upload is topped up (records are upserted by their inputs) rather than
trusted.
"""

from __future__ import annotations

import json
from typing import Any

from tasks.inference.prompting import document_id
from tasks.stage import digest
from tasks.warehouse.db import Warehouse

#: Records per ``merge_records`` call.
CHUNK = 1000
COMPLETE = "babelbench.complete"


def benchmark_records(wh: Warehouse, benchmark: str) -> list[dict[str, Any]]:
    """Every instance of ``benchmark`` as an evaluation-dataset record, by instance id."""
    records = []
    for instance_id, setting, lang, question, answer, gold, documents in wh.query(
            "SELECT instance_id, setting, lang, question, answer, gold, documents FROM instances WHERE benchmark = ?"
            " ORDER BY instance_id", [benchmark]):
        expectations: dict[str, Any] = {"expected_response": answer}
        if gold:
            expectations["expected_answers"] = json.loads(gold)
        records.append({"inputs": {"instance_id": instance_id, "setting": setting, "lang": lang, "question": question,
                                   "documents": [document_id(d) for d in json.loads(documents or "[]")]},
                        "expectations": expectations})
    return records


def dataset_name(benchmark: str, fingerprint: str) -> str:
    return f"{benchmark}@{fingerprint[:12]}"


def evaluation_dataset(wh: Warehouse, benchmark: str, experiment_id: str) -> Any:
    """The MLflow evaluation dataset of ``benchmark``'s current instances (created, completed, or reused), linked
    to ``experiment_id``; None when the benchmark has no instances."""
    from mlflow.genai.datasets import (
        add_dataset_to_experiments,
        create_dataset,
        get_dataset,
        search_datasets,
        set_dataset_tags,
    )

    records = benchmark_records(wh, benchmark)
    if not records:
        return None
    fingerprint = digest(records)
    name = dataset_name(benchmark, fingerprint)
    found = [d for d in search_datasets(filter_string=f'name = "{name}"') if d.tags.get("babelbench.fingerprint")
             == fingerprint]
    dataset = found[0] if found else create_dataset(name=name, experiment_id=[experiment_id], tags={
        "babelbench.benchmark": benchmark, "babelbench.fingerprint": fingerprint,
        "babelbench.instances": str(len(records))})
    if dataset.tags.get(COMPLETE) != "true":
        for start in range(0, len(records), CHUNK):
            dataset.merge_records(records[start:start + CHUNK])
        set_dataset_tags(dataset_id=dataset.dataset_id, tags={COMPLETE: "true"})
    if experiment_id not in dataset.experiment_ids:
        add_dataset_to_experiments(dataset_id=dataset.dataset_id, experiment_ids=[experiment_id])
    return get_dataset(dataset_id=dataset.dataset_id)  # as stored: its digest is of the records now in it
