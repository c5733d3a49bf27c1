"""``babelbench models``: list the model registry, check that a model can be used, add an entry, change its fields.

``models check`` is :mod:`tasks.llm.check`: the same check every run makes
before a model's first call, printed as a table (or JSON).

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
from typing import Annotated, Any, Optional

import typer

from flows.cli_support import command_group, fail
from tasks.errors import ConfigError
from tasks.settings import HOME_ENV

models_app = command_group("The model registry: which models exist, how to reach them, whether they can be used, their limits"
                           " and prices.")


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
    structured = _structured_modes(registry)
    if as_json:
        typer.echo(json.dumps([spec.model_dump(mode="json") | {"structured": structured[spec.name] or None}
                               for spec in registry.models], ensure_ascii=False))
        return
    typer.echo(f"# {registry.source}")
    columns = ("name", "backend", "model", "mode", "base_url", "price_in", "price_out", "knowledge_cutoff")
    rows = [[str(getattr(spec, c) if getattr(spec, c) is not None else "") for c in columns] + [structured[spec.name]]
            for spec in registry.models]
    columns += ("structured",)
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    typer.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for row in rows:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def _structured_modes(registry: Any) -> dict[str, str]:
    """Each model's structured-output mode as the home remembers it: learned by its check, '?' not yet learned,
    '' for backends that need none learned (in-process models, and the SDKs that have their own way)."""
    from tasks.llm import EndpointMemory

    memory = EndpointMemory(_home())
    try:
        return {spec.name: (record.structured if (record := memory.get(spec)) else "?") if spec.backend == "openai"
                else "" for spec in registry.models}
    except ConfigError as exc:
        fail(exc)


@models_app.command("check")
def models_check(
    name: Annotated[str, typer.Argument(help="The registry name of the model to check.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as one JSON object.")] = False,
    relearn: Annotated[bool, typer.Option(
        "--relearn", help="Learn the structured-output mode and the served model again instead of using what the home"
        " remembers (after the server changed, or to accept another model under this name).")] = False,
) -> None:
    """Check that a model can be used: reachable, its id served, chat and/or completion, the structured-output mode
    its server takes, one timed call, the context length where the server says it, usage and prices.
    Exits 0 when usable, 1 with the reason."""
    from tasks.llm import EndpointMemory, check_model, load_registry

    try:
        spec = load_registry(home=_home()).get(name)
        check = check_model(spec, EndpointMemory(_home()), relearn=relearn)
    except ConfigError as exc:
        fail(exc)
    if as_json:
        typer.echo(json.dumps(check.as_json(), ensure_ascii=False))
    else:
        rows = check.rows()
        width = max(len(label) for label, _ in rows)
        for label, value in rows:
            typer.echo(f"{label.ljust(width)}  {value}")
    if not check.usable:
        raise typer.Exit(1)


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
    terms: Annotated[Optional[str], typer.Option(
        help="Licence or terms of use of what the model writes (a name and URL), for published cards.")] = None,
) -> None:
    """Add a model to the registry and announce it (Prefect event babelbench.model.added) to the Prefect API in use:
    PREFECT_API_URL's, or the local one while it runs; with neither, the next command that runs a flow announces it."""
    from tasks.llm import add_model
    from tasks.prefect_api import running_api

    given = {"name": name, "backend": backend, "model": model, "base_url": base_url, "api_key_env": api_key_env,
             "api_key_secret": api_key_secret, "mode": mode, "max_concurrency": max_concurrency, "rpm": rpm,
             "tpm": tpm, "price_in": price_in, "price_out": price_out, "timeout": timeout,
             "knowledge_cutoff": knowledge_cutoff, "terms": terms}
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
    model: Annotated[Optional[str], typer.Option(help="Provider model id, as the server lists it.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Endpoint, e.g. http://host:8000/v1.")] = None,
    mode: Annotated[Optional[str], typer.Option(help="chat | completion.")] = None,
    max_concurrency: Annotated[Optional[int], typer.Option(help="Requests in flight at once.")] = None,
    rpm: Annotated[Optional[int], typer.Option(help="Requests per minute allowed.")] = None,
    tpm: Annotated[Optional[int], typer.Option(help="Tokens per minute allowed.")] = None,
    price_in: Annotated[Optional[float], typer.Option(help="USD per million input tokens.")] = None,
    price_out: Annotated[Optional[float], typer.Option(help="USD per million output tokens.")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Seconds to wait for one answer before retrying.")] = None,
    terms: Annotated[Optional[str], typer.Option(
        help="Licence or terms of use of what the model writes (a name and URL), for published cards.")] = None,
) -> None:
    """Change fields of a model's registry entry and announce it (Prefect event babelbench.model.updated)."""
    from tasks.llm import edit_model
    from tasks.prefect_api import running_api

    given = {"model": model, "base_url": base_url, "mode": mode, "max_concurrency": max_concurrency, "rpm": rpm, "tpm": tpm, "price_in": price_in,
             "price_out": price_out, "timeout": timeout, "knowledge_cutoff": knowledge_cutoff, "terms": terms}
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
