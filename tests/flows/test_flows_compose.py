"""Flows only compose: no SQL in a flow module, and every name a flow takes from ``tasks`` comes from a package's
face (its ``__init__``'s ``__all__``) or a public name of a top-level module — never from a package's insides.

Read from the syntax trees of ``flows/*.py``; nothing is imported but the faces themselves.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLOWS = sorted((REPO / "flows").glob("*.py"))
#: the opening of a SQL statement (not an English sentence that starts with "Select" or "drop")
SQL = re.compile(r"^\s*(SELECT\b.*\bFROM\b|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b"
                 r"|CREATE\s+(OR\s+REPLACE\s+)?(TABLE|VIEW|INDEX)\b|ALTER\s+TABLE\b|DROP\s+(TABLE|VIEW)\b"
                 r"|WITH\s+\w+\s+AS\s*\()", re.IGNORECASE | re.DOTALL)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant (an f-string's literal parts included), with its line."""
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def sql_strings(path: Path) -> list[str]:
    """``file:line`` of each string that is SQL."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{line}" for line, text in _strings(tree) if SQL.match(text)]


def private_imports(path: Path) -> list[str]:
    """``file:line module.name`` of each import that reaches past a package's face."""
    problems = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            problems += [f"{path.name}:{node.lineno} import {alias.name}" for alias in node.names
                         if alias.name.startswith("tasks.")]
        if not (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "tasks"):
            continue
        parts = node.module.split(".")
        target = REPO.joinpath(*parts)
        for alias in node.names:
            where = f"{path.name}:{node.lineno} {node.module}.{alias.name}"
            if target.is_dir():  # a package: the name must be on its face
                if alias.name not in getattr(importlib.import_module(node.module), "__all__", ()):
                    problems.append(where + " (not in the package's __all__)")
            elif len(parts) > 2:  # a module inside a package
                problems.append(where + f" (import it from {'.'.join(parts[:2])})")
            elif alias.name.startswith("_"):
                problems.append(where + " (private)")
    return problems


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('from tasks.arena.bradley_terry import ratings\nfrom tasks.arena import nonexistent\n'
                   'from tasks.errors import _private\nimport tasks.settings\n'
                   'Q = "SELECT * FROM leaderboard"\nR = f"""\n  update x set y = {1}"""\nS = "select the judge"\n'
                   'T = "drop: ignore ties"\n', encoding="utf-8")
    assert private_imports(bad) == [
        "bad.py:1 tasks.arena.bradley_terry.ratings (import it from tasks.arena)",
        "bad.py:2 tasks.arena.nonexistent (not in the package's __all__)",
        "bad.py:3 tasks.errors._private (private)",
        "bad.py:4 import tasks.settings"]
    assert sql_strings(bad) == ["bad.py:5", "bad.py:6"]  # "select the judge", "drop: …" are prose, not SQL


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.name)
def test_a_flow_module_holds_no_sql_and_imports_only_faces(path: Path) -> None:
    assert sql_strings(path) == []
    assert private_imports(path) == []
