"""DuckDB's extensions for a DuckLake, loaded by path from their pinned PyPI packages, never downloaded.

The packages ``duckdb-extension-ducklake``, ``-postgres`` and ``-httpfs`` ship each extension's signed binary for
the installed DuckDB at ``<package>/extensions/v<duckdb version>/<name>.duckdb_extension``.  DuckDB would fetch an
extension from its repository at run time on ``INSTALL`` or auto-loading; here both are switched off on the
connections that use them, so a machine without that repository (a worker behind a firewall, CI) works the same.

One quirk: DuckDB takes an extension's entry point from its file name, and the postgres extension's entry point is
``postgres_scanner``, so its file is loaded through a link named ``postgres_scanner.duckdb_extension``, made once
in a per-user cache folder.
"""

from __future__ import annotations

import os
import uuid
from importlib import resources
from pathlib import Path

import duckdb

from tasks.errors import ConfigError

#: extension -> (the package that ships it, the file name DuckDB must load it under)
PACKAGES = {
    "ducklake": ("duckdb_extension_ducklake", "ducklake"),
    "postgres": ("duckdb_extension_postgres", "postgres_scanner"),
    "httpfs": ("duckdb_extension_httpfs", "httpfs"),
}
#: connection settings that keep DuckDB from installing or auto-loading anything over the network
OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def extension_file(name: str) -> Path:
    """The binary of extension ``name`` for the installed DuckDB, from its package."""
    package, _ = PACKAGES[name]
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise ConfigError(f"the DuckDB extension {name!r} is not installed: pip install"
                          f" 'duckdb-extension-{name}=={duckdb.__version__}' (it is a dependency of babelbench)") from None
    path = Path(str(root)) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise ConfigError(f"{package} has no build for DuckDB {duckdb.__version__} (looked for {path}): install the"
                          f" package version that matches DuckDB, duckdb-extension-{name}=={duckdb.__version__}")
    return path


def _cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "babelbench" / "duckdb-extensions" / f"v{duckdb.__version__}"


def loadable_path(name: str) -> Path:
    """The path DuckDB loads extension ``name`` from: its package file, or a link to it under its entry point's name."""
    source = extension_file(name)
    _, entry = PACKAGES[name]
    if source.stem == entry:
        return source
    link = _cache_dir() / f"{entry}.duckdb_extension"
    if link.is_symlink() and Path(os.readlink(link)) == source:
        return link
    link.parent.mkdir(parents=True, exist_ok=True)
    temp = link.with_name(f".{link.name}.{uuid.uuid4().hex[:8]}")
    temp.symlink_to(source)
    temp.replace(link)  # atomic: two processes making it at once both end with a good link
    return link


def load(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """Load extensions ``names`` into ``con``'s database from their packages, with network installs switched off."""
    for setting, value in OFFLINE.items():
        con.execute(f"SET {setting} = {'true' if value else 'false'}")
    for name in names:
        con.execute(f"LOAD '{loadable_path(name)}'")
