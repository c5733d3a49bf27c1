"""Adding a model to the registry file: validated as a load would, written atomically, announced as an event.

The file is the home's ``models.yaml`` (or ``$BABELBENCH_MODELS``), created with the built-in models in it
when there is none, so adding a model never removes ``local`` and the baselines; an existing file keeps its
comments and layout where the ``models:`` list allows an append.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tasks.errors import ConfigError
from tasks.llm.registry import (
    REGISTRY_FILE,
    ModelSpec,
    Registry,
    default_registry,
    describe_error,
    notice_edits,
    parse_registry,
    registry_path,
    remember_registry,
)
from tasks.warehouse.atomic import atomic_write_text

HEADER = """\
# babelbench model registry (see the README's "QA recipes (ECLEKTIC, XRAG) and models").
# Written by `babelbench models add`; edit freely: every load validates it, and an edit is announced as a
# Prefect event (babelbench.model.added / updated / removed) that can trigger an evaluation of the model.
"""



def add_model(entry: dict[str, Any], home: Path) -> tuple[Path, list[Any]]:
    """Validate ``entry``, write it into the registry file atomically, announce the edit; (file, changes)."""
    label = f"model {entry.get('name')!r}"
    try:
        spec = ModelSpec.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError(f"{label}: {describe_error(exc)}") from None
    existing = registry_path(home)
    target = existing or home / REGISTRY_FILE
    before = parse_registry(existing) if existing else default_registry()
    if spec.name in before.names:
        raise ConfigError(f"{before.source}: a model named {spec.name!r} exists already; choose another name"
                          " (or edit its entry in the file)")
    new_entry = spec.model_dump(mode="json", exclude_defaults=True)
    if existing:
        old_text = existing.read_text(encoding="utf-8")
        text = _appended(old_text, new_entry)
    else:
        old_text = ""
        entries = [s.model_dump(mode="json", exclude_defaults=True) for s in before.models] + [new_entry]
        text = HEADER + yaml.safe_dump({"models": entries}, sort_keys=False, allow_unicode=True)
    return _write(target, text, before, old_text if existing else None, home)


def edit_model(name: str, changes: dict[str, Any], home: Path) -> tuple[Path, list[Any]]:
    """Set (or, with a value of None, remove) fields of the entry ``name``, validated and written atomically like
    :func:`add_model`, and announce the edit; (file, changes).  A registry that is still the built-in one is
    written out first.  The file is written out again, so its comments are not kept."""
    existing = registry_path(home)
    target = existing or home / REGISTRY_FILE
    before = parse_registry(existing) if existing else default_registry()
    before.get(name)  # an unknown name is refused with the known ones
    old_text = existing.read_text(encoding="utf-8") if existing else ""
    document = yaml.safe_load(old_text) if existing else {
        "models": [s.model_dump(mode="json", exclude_defaults=True) for s in before.models]}
    entry = next(e for e in document["models"] if isinstance(e, dict) and e.get("name") == name)
    for field, value in changes.items():
        if value is None:
            entry.pop(field, None)
        else:
            entry[field] = value
    text = (HEADER if not existing else "") + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return _write(target, text, before, old_text if existing else None, home)


def _write(target: Path, text: str, before: Registry, old_text: str | None, home: Path) -> tuple[Path, list[Any]]:
    """Check ``text`` as a registry, remember the registry it replaces (``old_text`` None: no file on disk yet),
    write it atomically and announce the changes; (file, changes)."""
    _check(text, target)
    home.mkdir(parents=True, exist_ok=True)
    remember_registry(target, before, home=home,
                      content_hash=hashlib.sha256(old_text.encode()).hexdigest() if old_text is not None else "")
    atomic_write_text(target, text)
    return target, _announce(target, home)


def _announce(target: Path, home: Path) -> list[Any]:
    changes = notice_edits(target, parse_registry(target), home=home)
    if any(change.sent for change in changes):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=30)  # delivered before the command returns
    return changes


def _appended(text: str, entry: dict[str, Any]) -> str:
    """``text`` with ``entry`` added to the end of its ``models:`` list, keeping the file's comments and layout.

    When the list is not a block list at the end of the file, the document is written out again (comments lost).
    """
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    models = None
    if isinstance(node, yaml.MappingNode):
        models = next((value for key, value in node.value if key.value == "models"), None)
    item = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True)
    if isinstance(models, yaml.SequenceNode) and not models.flow_style and models.value:
        rest = text[models.end_mark.index:]
        if all(not line.strip() or line.lstrip().startswith("#") for line in rest.splitlines()):
            first = text.splitlines()[models.value[0].start_mark.line]
            indent = " " * (len(first) - len(first.lstrip()))
            body = "".join(indent + line + "\n" for line in item.splitlines())
            return text + ("" if text.endswith("\n") else "\n") + body
    document = yaml.safe_load(text) or {}
    document["models"] = list(document.get("models") or []) + [entry]
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def _check(text: str, target: Path) -> None:
    """Refuse to write a registry that would not load (the message names the entry and field)."""
    with tempfile.TemporaryDirectory() as scratch:
        candidate = Path(scratch) / target.name
        candidate.write_text(text, encoding="utf-8")
        try:
            parse_registry(candidate)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(str(candidate), str(target))) from None

