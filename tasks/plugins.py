"""Plugins: the swappable components (importers, index and LLM backends, features, rankers, rating methods),
registered by kind and name and loaded only when used.

Each kind is a :class:`Kind`, declared next to the ``typing.Protocol`` its
plugins meet.  A plugin is registered with :func:`register` (a decorator, for
code that is imported anyway), with :func:`register_lazy` as a
``"module:attr"`` path, or by another distribution through an entry point in
the group ``babelbench.<kind>``.  A path and an entry point are the same
thing — an :class:`importlib.metadata.EntryPoint` — and are imported on the
first lookup of their name, so the built-ins that pull in a heavy or optional
dependency (the Elasticsearch client, an LLM SDK, torch) are declared as
paths and cost nothing in a process that never uses them.  Entry points are
read from the installed distributions' metadata on the first lookup of their
kind, without importing anything.

A plugin is checked against its kind's Protocol when it is registered, or
when a path is first loaded, so a missing method is an error naming the
plugin there, never an ``AttributeError`` in the middle of a run.  This
module sits at the bottom of the package: it imports nothing from the other
``tasks`` packages; they declare their kinds with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar

from tasks.errors import ConfigError

GROUP_PREFIX = "babelbench."
T = TypeVar("T")
P = TypeVar("P")


@dataclass
class _Entry:
    """A registered plugin: where it is defined, and the object once loaded (an entry point until then)."""

    where: str
    plugin: object = None
    entry_point: EntryPoint | None = None


_LOCK = threading.Lock()
_ENTRIES: dict[str, dict[str, _Entry]] = {}  # kind -> name -> entry, in the order registered
_KINDS: dict[str, Kind[Any]] = {}


def _members(protocol: type) -> tuple[list[str], list[str]]:
    """(methods, attributes) that ``protocol`` declares, those of the Protocols it extends included."""
    methods: list[str] = []
    attributes: list[str] = []
    for base in protocol.__mro__[:protocol.__mro__.index(Protocol)]:
        attributes += [name for name in vars(base).get("__annotations__", {}) if not name.startswith("_")]
        for name, value in vars(base).items():
            if isinstance(value, property) and not name.startswith("_"):
                attributes.append(name)
            elif (name == "__call__" or not name.startswith("_")) and (
                    callable(value) or isinstance(value, (classmethod, staticmethod))):
                methods.append(name)
    return sorted(set(methods)), sorted(set(attributes) - set(methods))


class Kind(Generic[P]):
    """One kind of plugin: its name (the entry-point group is ``babelbench.<name>``), the Protocol its plugins
    meet, and the noun its errors use.

    With ``classes``, a plugin is a class whose instances meet the Protocol
    (its constructor takes what the kind's lookup passes): the class must have
    every method; attributes are set by the constructor and cannot be checked
    before it runs.  Otherwise the plugin itself meets the Protocol, methods
    and attributes.
    """

    def __init__(self, name: str, protocol: type, noun: str, *, classes: bool = False) -> None:
        self.name = name
        self.protocol = protocol
        self.noun = noun
        self.classes = classes
        self._discovered = False
        with _LOCK:
            if name in _KINDS:
                raise ConfigError(f"plugin kind {name!r} is declared twice")
            for plugin_name, entry in _ENTRIES.get(name, {}).items():  # registered before the kind was declared
                if entry.entry_point is None:
                    self.check(plugin_name, entry.plugin, entry.where)
            _KINDS[name] = self

    @property
    def group(self) -> str:
        """The entry-point group that other distributions declare this kind's plugins in."""
        return GROUP_PREFIX + self.name

    def check(self, name: str, plugin: object, where: str) -> None:
        """A ConfigError naming the plugin and what it lacks, unless it meets the kind's Protocol."""
        methods, attributes = _members(self.protocol)
        if self.classes and not isinstance(plugin, type):
            raise ConfigError(f"{self.noun} {name!r} ({where}) is not a class; a {self.noun} is a class whose"
                              f" instances implement {self.protocol.__name__}")
        missing = [f"{method}()" for method in methods if not callable(getattr(plugin, method, None))]
        if not self.classes:
            missing += [attribute for attribute in attributes if not hasattr(plugin, attribute)]
        if missing:
            raise ConfigError(f"{self.noun} {name!r} ({where}) does not implement {self.protocol.__name__}:"
                              f" it has no {', '.join(missing)}")

    def names(self) -> list[str]:
        """Every registered name, in the order registered (entry points' when the kind was first looked up)."""
        with _LOCK:
            self._discover()
            return list(_ENTRIES.get(self.name, {}))

    def require(self, name: str) -> None:
        """A ConfigError naming the known names unless ``name`` is registered (nothing is imported)."""
        known = self.names()
        if name not in known:
            raise ConfigError(f"unknown {self.noun} {name!r} (known: {', '.join(sorted(known)) or 'none'})")

    def get(self, name: str) -> P:
        """The plugin registered as ``name``, loaded (and checked) on its first lookup."""
        self.require(name)
        with _LOCK:
            entry = _ENTRIES[self.name][name]
        if entry.entry_point is not None:  # imported outside the lock: its module may register plugins itself
            try:
                plugin = entry.entry_point.load()
            except (ImportError, AttributeError) as exc:
                raise ConfigError(f"{self.noun} {name!r}: cannot load {entry.where} ({exc})") from exc
            self.check(name, plugin, entry.where)
            with _LOCK:
                entry.plugin, entry.entry_point = plugin, None
        return entry.plugin  # type: ignore[return-value]

    def _discover(self) -> None:
        """Add the entry points of this kind's group, once per process (names only: nothing is imported)."""
        if self._discovered:
            return
        entries = _ENTRIES.setdefault(self.name, {})
        for entry_point in entry_points(group=self.group):
            entry, known = _Entry(entry_point.value, entry_point=entry_point), entries.get(entry_point.name)
            if known is None:
                entries[entry_point.name] = entry
            elif not _same(known, entry):
                source = f" of {entry_point.dist.name}" if entry_point.dist is not None else ""
                raise ConfigError(f"the entry point {entry_point.name} = {entry_point.value}{source} (group"
                                  f" {self.group}) names a {self.noun} that is registered already ({known.where});"
                                  " rename the entry point")
        self._discovered = True


def _where(plugin: object) -> str:
    """``module:qualified name`` of a class or function, a module's name, or the class of another object."""
    if isinstance(plugin, ModuleType):
        return plugin.__name__
    named = plugin if hasattr(plugin, "__qualname__") else type(plugin)
    return f"{named.__module__}:{named.__qualname__}"


def _same(known: _Entry, entry: _Entry) -> bool:
    """Whether two registrations are one plugin: the same object, or the same path (one of them not loaded)."""
    if known.entry_point is None and entry.entry_point is None:
        return known.plugin is entry.plugin
    return known.where == entry.where


def _add(kind: str, name: str, entry: _Entry) -> None:
    with _LOCK:
        entries = _ENTRIES.setdefault(kind, {})
        known = entries.get(name)
        if known is not None and not _same(known, entry):
            noun = _KINDS[kind].noun if kind in _KINDS else f"{kind} plugin"
            raise ConfigError(f"{noun} {name!r} is registered already ({known.where}); cannot register"
                              f" {entry.where} under the same name")
        if known is not None and entry.entry_point is not None:
            return  # the same path again, or the path of the plugin loaded already
        if kind in _KINDS and entry.entry_point is None:
            _KINDS[kind].check(name, entry.plugin, entry.where)
        entries[name] = entry


def register(kind: str, name: str) -> Callable[[T], T]:
    """Decorator: register the class or object as plugin ``name`` of ``kind`` (checked now if the kind is declared
    already, else when it is declared)."""
    def add(plugin: T) -> T:
        _add(kind, name, _Entry(_where(plugin), plugin))
        return plugin
    return add


def register_lazy(kind: str, name: str, target: str) -> None:
    """Register ``target`` (``"module:attr"``, or ``"module"`` for a module) as plugin ``name`` of ``kind``; it is
    imported and checked on its first lookup."""
    _add(kind, name, _Entry(target, entry_point=EntryPoint(name, target, GROUP_PREFIX + kind)))


def unregister(kind: str, name: str) -> None:
    """Forget plugin ``name`` of ``kind`` (one registered for a run or a test, in this process only)."""
    with _LOCK:
        _ENTRIES.get(kind, {}).pop(name, None)
