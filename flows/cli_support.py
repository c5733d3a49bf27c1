"""What every ``babelbench`` command shares: failing with a clear message, printing stage cells."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional, TypeVar

import typer

from tasks.catalog import scope
from tasks.errors import BabelbenchError
from tasks.settings import resolve_home

if TYPE_CHECKING:
    from tasks.warehouse import Warehouse

P = TypeVar("P")
T = TypeVar("T")


def command_group(help_text: str, **settings: object) -> typer.Typer:
    """A command group with plain click-style help: Typer's rich help prints a ``<bool>`` type after every flag."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None, **settings)


def force_option(*flows: str) -> object:
    """A repeatable ``--force STAGE`` option whose help names the stages the command's ``flows`` may recompute: the
    stages they run and those they read (:func:`tasks.catalog.scope`)."""
    names = ", ".join(stage.name for stage in scope(*flows))
    return typer.Option(metavar="STAGE", help=f"Recompute STAGE and what depends on it (repeatable). Stages: {names}.")


CorpusForce = Annotated[Optional[list[str]], force_option("corpus")]
ClirForce = Annotated[Optional[list[str]], force_option("clir-build")]
QaForce = Annotated[Optional[list[str]], force_option("qa-build", "translate", "instances")]


MaxCalls = Annotated[Optional[int], typer.Option(help="Stop before more than N paid model calls in this run.")]
MaxTokens = Annotated[Optional[int], typer.Option(help="Stop before more than N tokens (in + out) in this run.")]
MaxUsd = Annotated[Optional[float], typer.Option(help="Stop before spending more than this many USD in this run.")]


def budget_of(max_calls: int | None, max_tokens: int | None, max_usd: float | None):  # noqa: ANN201 - Budget, lazy
    """The run's budget from the command's ``--max-calls/--max-tokens/--max-usd``."""
    from tasks.llm import Budget

    return Budget(max_calls=max_calls, max_tokens=max_tokens, max_usd=max_usd)


def fail(exc: BaseException) -> NoReturn:
    """Report a bad input or setup in one red line and exit 2; exit 1 is kept for "a stage cell failed"."""
    typer.secho(f"error: {_one_line(exc)}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _one_line(exc: BaseException) -> str:
    """The error as one line; a pydantic validation error as ``field: problem`` for each bad field."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    return "; ".join(f"{'.'.join(map(str, error['loc'])) or 'parameters'}: {error['msg'].removeprefix('Value error, ')}"
                     for error in exc.errors())


_verbose = False


def set_verbose(verbose: bool) -> None:
    """Remember the global ``--verbose`` choice for the flow commands of this process."""
    global _verbose
    _verbose = verbose


class _HideUserErrorTracebacks(logging.Filter):
    """Keep Prefect's report of a babelbench error off the terminal: the command prints that error as one line.

    The error was raised on purpose with a message that says what to fix, so a
    traceback adds nothing for the user; the Prefect run log (a separate
    handler) keeps the full record, and ``--verbose`` shows it here too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, BabelbenchError):
            return False
        # Prefect's final-state line names the error as "Failed('...: ConfigError: ...')", without exc_info
        message = record.getMessage()
        return not (message.startswith("Finished in state Failed") and any(f"{name}: " in message for name in _user_error_names()))


def _user_error_names() -> set[str]:
    """Class names of the project's deliberate errors, as Prefect's final-state messages spell them."""
    names: set[str] = set()
    pending: list[type[BaseException]] = [BabelbenchError]
    while pending:
        cls = pending.pop()
        names.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return names


def prepare_flow_run() -> None:
    """Give this process a Prefect API (the local one commands share, started if none runs), and keep user-error
    tracebacks off the terminal."""
    from tasks.prefect_api import ensure_api

    ensure_api()
    if _verbose:
        return
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            terminal = isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
            if terminal and not any(isinstance(f, _HideUserErrorTracebacks) for f in handler.filters):
                handler.addFilter(_HideUserErrorTracebacks())


def run_cells(run: Callable[[], list[dict]], problems: Callable[[], list[str]] | None = None,
              results: Callable[[], None] | None = None) -> None:
    """Run a flow that returns stage cells, print them, and exit 1 when any cell failed or ``problems`` (asked
    after the run) names any: items that failed inside cells that completed, printed as one error line. When
    every cell completed, ``results`` prints what the run produced, under the cells."""
    try:
        prepare_flow_run()
        rows = run()
        found = problems() if problems else []
    except BabelbenchError as exc:
        fail(exc)
    print_table(rows)
    failed = any(r["status"] == "failed" for r in rows)
    if results is not None and not failed:
        typer.echo("")
        results()
    if found:
        typer.secho(f"error: {'; '.join(found)}", fg=typer.colors.RED, err=True)
    if found or failed:
        raise typer.Exit(1)


def run_flow(flow: Callable[[P], list[dict]], build: Callable[[], P],
             problems: Callable[[P], list[str]] | None = None, results: Callable[[P], None] | None = None) -> None:
    """Build a command's flow parameters (bad values: one clear error, exit 2), then run it as :func:`run_cells`
    with ``problems`` and ``results`` of those parameters."""
    try:
        params = build()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        fail(exc)
    run_cells(lambda: flow(params), (lambda: problems(params)) if problems else None,
              (lambda: results(params)) if results else None)


def with_warehouse(action: Callable[[Warehouse], T], *, read_only: bool = False, as_of: int | None = None) -> T:
    """Run ``action`` on the home's warehouse (as it was at snapshot ``as_of``, when given); a babelbench error
    becomes one clear line and exit 2."""
    from tasks.home import open_warehouse

    try:
        with open_warehouse(resolve_home(), read_only=read_only, as_of=as_of) as wh:
            return action(wh)
    except BabelbenchError as exc:
        fail(exc)


def split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def key_values(pairs: list[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` options as a mapping, each value read as JSON where it is JSON (``5``, ``true``, ``["a"]``) and
    as text otherwise; a pair without ``=`` stops the command, naming it."""
    found: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(BabelbenchError(f"{option} {pair!r}: expected KEY=VALUE"))
        try:
            found[key.strip()] = json.loads(value)
        except ValueError:
            found[key.strip()] = value
    return found


def print_table(rows: list[dict]) -> None:
    """Stage cells as aligned columns, for operators reading a terminal."""
    if not rows:
        return
    columns = ["stage", "cell", "status", "rows", "issues", "fingerprint", "message"]
    widths = {c: max(len(c), *(len(str(r.get(c) if r.get(c) is not None else "")) for r in rows)) for c in columns[:-1]}
    typer.echo("  ".join(c.ljust(widths.get(c, 0)) for c in columns))
    for r in rows:
        typer.echo("  ".join(str(r.get(c) if r.get(c) is not None else "").ljust(widths.get(c, 0)) for c in columns))
