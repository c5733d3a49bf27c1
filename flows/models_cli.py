"""``babelbench models``: list the model registry, add an entry to it.

``models add`` validates the entry as a registry load would (the same
messages), refuses a name that is taken, and writes the registry file
atomically: the home's ``models.yaml`` (or ``$BABELBENCH_MODELS``), created
with the built-in models in it when there is none, so adding a model never
removes ``local`` and the baselines.  The edit is then announced as a Prefect
event ``babelbench.model.added`` (resource ``babelbench.model.<name>``), which
the ``evaluate`` deployment's ``evaluate-on-new-model`` trigger answers; see
``tasks/llm/registry.py``.
"""

# no `from __future__ import annotations`: typer reads the options' annotations at runtime
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
import yaml

from flows.cli_support import command_group, fail
from tasks.errors import ConfigError
from tasks.settings import HOME_ENV

models_app = command_group("The model registry: which models exist, how to reach them, their limits and prices.")

HEADER = """\
# babelbench model registry (see the README's "QA recipes (ECLEKTIC, XRAG) and models").
# Written by `babelbench models add`; edit freely: every load validates it, and an edit is announced as a
# Prefect event (babelbench.model.added / updated / removed) that can trigger an evaluation of the model.
"""


def _home() -> Path:
    return Path(os.environ[HOME_ENV])


@models_app.command("list")
def models_list(as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of the entries.")] = False) -> None:
    """The models in effect: the registry file's, or the built-in ones when there is no file."""
    from tasks.llm.registry import load_registry

    try:
        registry = load_registry(home=_home())
    except ConfigError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps([spec.model_dump(mode="json") for spec in registry.models], ensure_ascii=False))
        return
    typer.echo(f"# {registry.source}")
    columns = ("name", "backend", "model", "mode", "base_url", "price_in", "price_out")
    rows = [[str(getattr(spec, c) if getattr(spec, c) is not None else "") for c in columns] for spec in registry.models]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    typer.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for row in rows:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


@models_app.command("add")
def models_add(
    name: Annotated[str, typer.Option(help="What stages and the CLI will call the model.")],
    backend: Annotated[str, typer.Option(help="openai (any OpenAI-compatible endpoint) | anthropic | llamacpp | baseline.")],
    model: Annotated[str, typer.Option(help="Provider model id; for llamacpp a GGUF path.")],
    base_url: Annotated[Optional[str], typer.Option(help="Endpoint, e.g. http://host:8000/v1.")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(help="Environment variable holding the API key.")] = None,
    api_key_secret: Annotated[Optional[str], typer.Option(help="Prefect Secret block holding the API key.")] = None,
    mode: Annotated[Optional[str], typer.Option(help="chat | completion (default chat).")] = None,
    max_concurrency: Annotated[Optional[int], typer.Option(help="Requests in flight at once (default 4).")] = None,
    rpm: Annotated[Optional[int], typer.Option(help="Requests per minute allowed.")] = None,
    tpm: Annotated[Optional[int], typer.Option(help="Tokens per minute allowed.")] = None,
    price_in: Annotated[Optional[float], typer.Option(help="USD per million input tokens.")] = None,
    price_out: Annotated[Optional[float], typer.Option(help="USD per million output tokens.")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Seconds to wait for one answer before retrying.")] = None,
) -> None:
    """Add a model to the registry and announce it (Prefect event babelbench.model.added)."""
    given = {"name": name, "backend": backend, "model": model, "base_url": base_url, "api_key_env": api_key_env,
             "api_key_secret": api_key_secret, "mode": mode, "max_concurrency": max_concurrency, "rpm": rpm,
             "tpm": tpm, "price_in": price_in, "price_out": price_out, "timeout": timeout}
    try:
        target, changes = add_model({key: value for key, value in given.items() if value is not None}, _home())
    except ConfigError as exc:
        fail(exc)
    typer.echo(f"added {name!r} to {target}")
    for change in changes:
        if change.sent:
            typer.echo(f"announced {change.event} for {change.name!r} (Prefect event, resource babelbench.model.{change.name})")
        else:
            typer.echo(f"not announced yet: {change.event} for {change.name!r} — no Prefect API is configured"
                       " (PREFECT_API_URL); the next run that loads the registry with one announces it")


def add_model(entry: dict[str, Any], home: Path) -> tuple[Path, list[Any]]:
    """Validate ``entry``, write it into the registry file atomically, announce the edit; (file, changes)."""
    from pydantic import ValidationError

    from tasks.llm.registry import (
        REGISTRY_FILE, ModelSpec, _describe, default_registry, notice_edits, parse_registry, registry_path,
        remember_registry,
    )
    from tasks.warehouse.atomic import atomic_write_text

    label = f"model {entry.get('name')!r}"
    try:
        spec = ModelSpec.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError(f"{label}: {_describe(exc)}") from None
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
    _check(text, target)
    home.mkdir(parents=True, exist_ok=True)
    remember_registry(target, before, home=home,
                      content_hash=hashlib.sha256(old_text.encode()).hexdigest() if existing else "")
    atomic_write_text(target, text)
    changes = notice_edits(target, parse_registry(target), home=home)
    if any(change.sent for change in changes):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=30)  # delivered before the command returns
    return target, changes


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
    from tasks.llm.registry import parse_registry

    with tempfile.TemporaryDirectory() as scratch:
        candidate = Path(scratch) / target.name
        candidate.write_text(text, encoding="utf-8")
        try:
            parse_registry(candidate)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(str(candidate), str(target))) from None

