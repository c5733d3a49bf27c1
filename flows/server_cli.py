"""``babelbench server``: the local Prefect API that commands share (``tasks/prefect_api.py``), shown or stopped."""

# no `from __future__ import annotations`: typer reads the options' annotations at runtime
import time
from typing import Annotated

import typer

from flows.cli_support import command_group, fail
from tasks.errors import ConfigError

server_app = command_group("The local Prefect API that flow commands share: started by the first, stopped when idle.")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:g} s"


@server_app.command("status")
def server_status() -> None:
    """Which Prefect API commands use: the configured one, or the local server (its address, pid, users, log)."""
    from tasks.prefect_api import configured_api_url, idle_seconds, local_api

    configured, server = configured_api_url(), local_api()
    if configured:
        typer.echo(f"commands use the Prefect API at {configured} (PREFECT_API_URL)")
    if server is None:
        if not configured:
            typer.echo(f"no local Prefect API runs; the next command that runs a flow starts one (it stops after"
                       f" {_minutes(idle_seconds())} without a command)")
        return
    typer.echo(f"local Prefect API {server.url}: pid {server.pid}, up {_minutes(time.time() - server.started)},"
               f" {len(server.users)} command(s) using it, stops after {_minutes(server.idle_seconds)} without one")
    typer.echo(f"log: {server.log}")


@server_app.command("stop")
def server_stop(
    force: Annotated[bool, typer.Option("--force", help="Stop it even while commands use it (their runs fail).")]
    = False,
) -> None:
    """Stop the local Prefect API now (it also stops by itself when no command has used it for a while)."""
    from tasks.prefect_api import stop_local_api

    try:
        server = stop_local_api(force=force)
    except ConfigError as exc:
        fail(exc)
    typer.echo("no local Prefect API runs" if server is None else f"stopped the local Prefect API {server.url}"
                                                                     f" (pid {server.pid})")
