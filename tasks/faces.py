"""Package faces: the names a package offers the layers above it, imported from its modules on first use.

A package's ``__init__`` declares its face with :func:`lazy_face`; code in
higher layers (the flows) imports from the package, never from its modules,
and importing the package costs nothing until a name is used — so a command
that needs one stage does not import every model backend.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(package: str, names: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``(__all__, __getattr__)`` for ``package``, whose public ``names`` each live in the module named beside it
    (relative to the package)."""

    def attribute(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)  # looked up once
        return value

    return sorted(names), attribute
