"""``babelbench models``: list the model registry, add an entry to it, change an entry's fields.

``models add`` validates the entry as a registry load would (the same
messages), refuses a name that is taken, and writes the registry file
atomically (:mod:`tasks.llm.registry_edit`).  The edit is then announced as a Prefect
event ``babelbench.model.added`` (resource ``babelbench.model.<name>``), which
the ``evaluate`` deployment's ``evaluate-on-new-model`` trigger answers; see
``tasks/llm/registry.py``.  With no Prefect API in use (none configured, no
local one running) nothing is said: the next command that runs a flow
announces the edit.
"""

# no `from __future__ import annotations`: typer reads the options' annotations at runtime
import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from flows.cli_support import command_group, fail
from tasks.errors import ConfigError
from tasks.settings import HOME_ENV

models_app = command_group("The model registry: which models exist, how to reach them, their limits and prices.")


def _home() -> Path:
    return Path(os.environ[HOME_ENV])


@models_app.command("list")
def models_list(as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of the entries.")] = False) -> None:
    """The models in effect: the registry file's, or the built-in ones when there is no file."""
    from tasks.llm import load_registry

    try:
        registry = load_registry(home=_home())
    except ConfigError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps([spec.model_dump(mode="json") for spec in registry.models], ensure_ascii=False))
        return
    typer.echo(f"# {registry.source}")
    columns = ("name", "backend", "model", "mode", "base_url", "price_in", "price_out", "knowledge_cutoff")
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
    knowledge_cutoff: Annotated[Optional[str], typer.Option(
        help="Last month (YYYY-MM) or day (YYYY-MM-DD) of the training data; unknown when not given.")] = None,
) -> None:
    """Add a model to the registry and announce it (Prefect event babelbench.model.added) to the Prefect API in use:
    PREFECT_API_URL's, or the local one while it runs; with neither, the next command that runs a flow announces it."""
    from tasks.llm import add_model
    from tasks.prefect_api import running_api

    given = {"name": name, "backend": backend, "model": model, "base_url": base_url, "api_key_env": api_key_env,
             "api_key_secret": api_key_secret, "mode": mode, "max_concurrency": max_concurrency, "rpm": rpm,
             "tpm": tpm, "price_in": price_in, "price_out": price_out, "timeout": timeout,
             "knowledge_cutoff": knowledge_cutoff}
    try:
        api = running_api()
        target, changes = add_model({key: value for key, value in given.items() if value is not None}, _home())
    except ConfigError as exc:
        fail(exc)
    typer.echo(f"added {name!r} to {target}")
    _report(changes, api)


@models_app.command("edit")
def models_edit(
    name: Annotated[str, typer.Argument(help="The registry name of the model to change.")],
    knowledge_cutoff: Annotated[Optional[str], typer.Option(
        help="Last month (YYYY-MM) or day (YYYY-MM-DD) of the training data; 'unknown' removes it.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Endpoint, e.g. http://host:8000/v1.")] = None,
    max_concurrency: Annotated[Optional[int], typer.Option(help="Requests in flight at once.")] = None,
    rpm: Annotated[Optional[int], typer.Option(help="Requests per minute allowed.")] = None,
    tpm: Annotated[Optional[int], typer.Option(help="Tokens per minute allowed.")] = None,
    price_in: Annotated[Optional[float], typer.Option(help="USD per million input tokens.")] = None,
    price_out: Annotated[Optional[float], typer.Option(help="USD per million output tokens.")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Seconds to wait for one answer before retrying.")] = None,
) -> None:
    """Change fields of a model's registry entry and announce it (Prefect event babelbench.model.updated)."""
    from tasks.llm import edit_model
    from tasks.prefect_api import running_api

    given = {"base_url": base_url, "max_concurrency": max_concurrency, "rpm": rpm, "tpm": tpm, "price_in": price_in,
             "price_out": price_out, "timeout": timeout, "knowledge_cutoff": knowledge_cutoff}
    changes = {key: value for key, value in given.items() if value is not None}
    if knowledge_cutoff == "unknown":
        changes["knowledge_cutoff"] = None
    if not changes:
        fail(ConfigError(f"models edit {name}: nothing to change; give at least one option (see --help)"))
    try:
        api = running_api()
        target, announced = edit_model(name, changes, _home())
    except ConfigError as exc:
        fail(exc)
    typer.echo(f"changed {', '.join(changes)} of {name!r} in {target}")
    _report(announced, api)


def _report(changes: list, api: str | None) -> None:
    """Say, per registry change, whether its Prefect event went out to ``api`` (the Prefect API in use, if any)."""
    for change in changes:
        if change.sent:
            typer.echo(f"announced {change.event} for {change.name!r} (Prefect event, resource babelbench.model.{change.name})")
        elif api:  # with no API in use the next flow command announces it: nothing to do
            typer.secho(f"not announced: the Prefect API at {api} did not take {change.event} for {change.name!r};"
                        " check that it runs (`prefect server start`, or `babelbench server status` for the local"
                        " one): the next command that loads the registry announces it", fg=typer.colors.YELLOW,
                        err=True)
