"""The dataset card (``README.md``): YAML front matter the hub and ``datasets`` read, and a body written from the
warehouse by the package's template (``templates/card.md.j2``).

The front matter is huggingface-hub's ``DatasetCardData`` (configurations and their data files, the features
``datasets`` checks the files against, languages as BCP-47 codes, licence, task and size categories, pretty name);
the body is rendered by ``DatasetCard.from_template`` from :class:`~tasks.publish.provenance.Provenance`.  Nothing
in it depends on when it is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets
import langcodes
from huggingface_hub import DatasetCard, DatasetCardData

from tasks.publish.layout import DOCUMENT_FIELDS, FIELDS, LICENCE, SOURCE_FIELDS, data_file
from tasks.publish.provenance import Provenance
from tasks.publish.rows import Configuration
from tasks.recipe import Recipe

TEMPLATE = Path(__file__).with_name("templates") / "card.md.j2"
#: the hub's size categories: (upper bound, name)
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
         (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"))


@dataclass(frozen=True)
class FieldDoc:
    """One column of the folder as the card lists it."""

    name: str
    type: str
    meaning: str


def size_category(rows: int) -> str:
    """The hub's size category of a dataset of ``rows`` rows."""
    return next((name for bound, name in SIZES if rows < bound), "n>100M")


def bcp47(codes: Sequence[str]) -> list[str]:
    """Language codes as BCP-47 tags, sorted."""
    return sorted({langcodes.standardize_tag(code) for code in codes})


def features(configuration: Configuration) -> datasets.Features:
    """The ``datasets`` features of a configuration, from its Arrow schema."""
    return datasets.Features.from_arrow_schema(configuration.table.schema)


def field_docs(configuration: Configuration, fields: dict[str, str]) -> list[FieldDoc]:
    """Every column with its ``datasets`` type and meaning (``fields``: the core's, overridden by the recipe's)."""
    described = features(configuration)
    return [FieldDoc(name, str(described[name]).replace("|", "/"), fields.get(name, "(not described by its recipe)"))
            for name in configuration.table.column_names]


def front_matter(pretty_name: str, licence: str, langs: Sequence[str], task_categories: Sequence[str],
                 tags: Sequence[str], configurations: Sequence[Configuration]) -> DatasetCardData:
    """The front matter: what the hub and ``load_dataset`` read — each configuration with the data file of each of
    its splits and its features (every split of a configuration has the same)."""
    rows = sum(c.table.num_rows for c in configurations)
    by_name: dict[str, list[Configuration]] = {}
    for c in configurations:
        by_name.setdefault(c.name, []).append(c)
    return DatasetCardData(
        pretty_name=pretty_name, license=licence, language=bcp47(langs), task_categories=list(task_categories),
        size_categories=[size_category(rows)], tags=list(tags),
        configs=[{"config_name": name, "data_files": [{"split": c.split, "path": data_file(name, c.split)}
                                                      for c in splits]} for name, splits in by_name.items()],
        dataset_info=[{"config_name": name, **datasets.DatasetInfo(features=features(splits[0]))._to_yaml_dict()}
                      for name, splits in by_name.items()])


def tags(recipe: Recipe) -> list[str]:
    """The hub tags of a dataset of ``recipe``: babelbench, the recipe's name (which ``import hf`` reads back),
    Wikipedia, cross-lingual."""
    return ["babelbench", recipe.name, "wikipedia", "cross-lingual"]


def card_data(p: Provenance, configurations: Sequence[Configuration], licence: str) -> DatasetCardData:
    """The front matter of a benchmark's card."""
    return front_matter(p.benchmark, licence, p.langs, p.recipe.card.task_categories, tags(p.recipe), configurations)


def citation(name: str, title: str, updated: str, repo: str | None) -> str:
    """A BibTeX entry for a published dataset ``name`` of the recipe titled ``title``, last written on ``updated``."""
    key = "".join(char if char.isalnum() else "_" for char in name)
    where = f"https://huggingface.co/datasets/{repo}" if repo else "a dataset published with babelbench"
    return (f"@misc{{{key}_{updated[:4]},\n  title        = {{{name}: a {title} benchmark built"
            f" with babelbench}},\n  year         = {{{updated[:4]}}},\n  howpublished = {{{where}}},\n"
            f"  note         = {{Benchmark last written on {updated}}}\n}}")


def render_card(p: Provenance, configurations: Sequence[Configuration], repo: str | None) -> str:
    """The whole ``README.md``."""
    fields = {**FIELDS, **p.recipe.card.fields}
    documents = configurations[0].table.schema.field("documents").type.value_type \
        if "documents" in configurations[0].table.column_names else None
    licence = p.imported.get("licence") or LICENCE
    card = DatasetCard.from_template(
        card_data(p, configurations, licence), template_path=str(TEMPLATE), p=p, repo=repo,
        summary=p.recipe.card.summary, recipe_title=p.recipe.card.title, headline=p.recipe.headline,
        origin=p.origin, configurations=configurations, fields=field_docs(configurations[0], fields),
        document_fields=[(f.name, {**DOCUMENT_FIELDS, **p.recipe.card.fields}.get(f.name, "(not described by its"
                                                                                          " recipe)"))
                         for f in documents] if documents is not None else [],
        source_fields=sorted(SOURCE_FIELDS.items()),
        citation=citation(p.benchmark, p.recipe.card.title, p.updated, repo),
        recipe_citation=p.recipe.card.citation, source_licence=p.imported.get("licence"),
        source_citation=p.imported.get("citation"), rate=_rate, number=_number)
    return str(card)


def _rate(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
