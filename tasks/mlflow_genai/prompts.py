"""Prompt templates in MLflow's prompt registry, linked to the runs that used them.

Each template ``tasks/llm/templates/NAME.j2`` is the prompt
``babelbench.NAME``; a version is registered for each text of it, tagged
with the text's sha256 (:func:`tasks.llm.template_hash`, what stage
fingerprints hold) and given the alias ``sha-<first 12 hex digits>`` — so
``prompts:/babelbench.NAME@sha-…`` loads the text a fingerprint names.  An
unchanged template finds its version and registers nothing.

A run used the templates whose hash its stage cells read (the ``template``
and ``templates`` fields of their ``artifacts`` config), whether computed
or taken from the cache; a model's evaluation run, the templates its
responses and verdicts were asked with.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tasks.llm.prompts import available_templates, template_hash, template_source
from tasks.warehouse.db import Warehouse

PREFIX = "babelbench."
HASH_TAG = "babelbench.template_hash"


def prompt_name(template: str) -> str:
    """The MLflow prompt of a template: ``babelbench.<name>``, a recipe's ``<recipe>:<name>`` as ``<recipe>.<name>``
    (prompt names take no colon)."""
    return PREFIX + template.replace(":", ".")


def template_of(prompt: str) -> str:
    """The template a prompt of :func:`prompt_name` was registered from."""
    return prompt.removeprefix(PREFIX).replace(".", ":", 1)


def hash_alias(digest: str) -> str:
    return f"sha-{digest[:12]}"


def register_template(client: Any, template: str) -> Any:
    """The registered version of ``template``'s current text (an ``MlflowClient``'s ``PromptVersion``)."""
    name, digest = prompt_name(template), template_hash(template)
    if client.get_prompt(name) is not None:
        for version in client.search_prompt_versions(name):
            if version.tags.get(HASH_TAG) == digest:
                return version
    version = client.register_prompt(name=name, template=template_source(template),
                                     commit_message=f"{template}.j2, sha256 {digest[:12]}",
                                     tags={HASH_TAG: digest, "babelbench.template": f"{template}.j2"})
    client.set_prompt_alias(name, hash_alias(digest), version.version)
    return version


def link_templates(tracking_uri: str, run_id: str, templates: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Register ``templates`` where needed and link them to ``run_id``; template → (prompt name, version)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    linked = {}
    for template in sorted(set(templates)):
        version = register_template(client, template)
        client.link_prompt_version_to_run(run_id, version)
        linked[template] = (version.name, str(version.version))
    return linked


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def run_templates(wh: Warehouse, run_id: str, *, computed_only: bool = False) -> list[str]:
    """The templates whose hash the stage cells of flow run ``run_id`` read (with ``computed_only``, the cells it
    computed rather than found cached), by name."""
    known = {template_hash(name): name for name in available_templates()}
    used = {known[text] for (config,) in wh.query("SELECT config FROM artifacts WHERE run_id = ? AND config IS NOT NULL"
                                                   " AND (NOT ? OR status = 'computed')", [run_id, computed_only])
            for text in _strings(json.loads(config)) if text in known}
    return sorted(used)
