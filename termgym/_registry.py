"""One registry shape for every extension point: sandbox backends, grader kinds, agents.

A `Registry` maps names to entries whose target is a "module:attr" string (imported on first
use) or the object itself, filled by `register()` and by an entry-point group that
installed packages add to (pluggy's `load_setuptools_entrypoints` walk, done once). A miss
raises the registry's error with the known names and a "did you mean" suggestion, as
Gymnasium's registration does.

Thread-safe: the entry-point walk fills the registry before any caller sees it as loaded
(the first calls from several threads at once all find every plugin), and changes and
reads of the names hold one lock.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from termgym._vocabulary import did_you_mean
from termgym.errors import TermgymError

T = TypeVar("T")


def load_target(target: str, what: str) -> Any:
    """Import "module:attr" (the attribute may be dotted).

    Raises:
        ValueError: `target` is not of the form "module:attr", or cannot be imported.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what}: expected an entry point 'module:attr', found {target!r}")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what}: cannot import {target!r}: {exc}") from exc
    return value


@dataclass
class Entry(Generic[T]):
    """One registered name: where its object lives, where it came from, and options."""

    name: str
    target: str | T
    source: str = "register"
    options: Mapping[str, Any] = field(default_factory=dict)
    _loaded: T | None = None

    def load(self, what: str) -> T:
        """The object (imported once when the target is a "module:attr" string)."""
        if self._loaded is None:
            target = self.target
            if isinstance(target, str):
                target = load_target(target, f"{what} {self.name!r} ({self.source})")
            self._loaded = target
        return self._loaded


class Registry(Generic[T]):
    """Names -> entries, with an entry-point group and clear misses.

    Args:
        what: What the entries are ("sandbox backend", "grader kind", "agent"), for messages.
        group: The entry-point group installed packages register under.
        error: The exception a miss raises (a TermgymError subclass).
        miss: The message of a miss, formatted with {name}, {known} (the sorted names, comma
            separated), {listed} (their Python list) and {hint} (" Did you mean 'x'?" or "").
    """

    def __init__(
        self,
        what: str,
        group: str,
        error: type[TermgymError],
        miss: str = "Expected {article} {what} among {known}; got {name!r}.{hint}",
    ) -> None:
        self.what, self.group, self.error, self.miss = what, group, error, miss
        self._entries: dict[str, Entry[T]] = {}
        self._plugins_loaded = False
        self._lock = threading.Lock()

    def register(
        self,
        name: str,
        target: str | T,
        *,
        override: bool = True,
        options: Mapping[str, Any] | None = None,
    ) -> Entry[T]:
        """Register `target` ("module:attr" or the object) under `name`.

        Raises:
            ValueError: `name` is taken and `override` is False.
        """
        self._load_plugins()
        with self._lock:
            if name in self._entries and not override:
                raise ValueError(
                    f"{self.what} {name!r} is already registered "
                    f"({self._entries[name].source}); pass override=True to replace it"
                )
            entry = Entry(name, target, "register", dict(options or {}))
            self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove `name` (no error if absent)."""
        with self._lock:
            self._entries.pop(name, None)

    def names(self) -> list[str]:
        """Every registered name, plugins included, sorted."""
        self._load_plugins()
        with self._lock:
            return sorted(self._entries)

    def entry(self, name: str) -> Entry[T]:
        """The entry of `name`; the registry's error, with a suggestion, on a miss."""
        self._load_plugins()
        with self._lock:
            found = self._entries.get(name)
            if found is not None:
                return found
            known = sorted(self._entries)
        message = self.miss.format(
            name=name,
            what=self.what,
            article="an" if self.what[:1] in "aeiou" else "a",
            known=", ".join(known) or "(none)",
            listed=known,
            hint=did_you_mean(name, known),
        )
        raise self.error(message)

    def load(self, name: str) -> T:
        """The object registered under `name`.

        Raises:
            The registry's error: no such name, or its target cannot be imported.
        """
        entry = self.entry(name)
        try:
            return entry.load(self.what)
        except ValueError as exc:
            raise self.error(str(exc)) from exc

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        with self._lock:
            return name in self._entries

    def _load_plugins(self) -> None:
        """Walk the entry-point group once; marked done only once every plugin is in."""
        if self._plugins_loaded:
            return
        with self._lock:
            if self._plugins_loaded:
                return
            for point in entry_points(group=self.group):
                source = f"entry point {point.name} of {point.dist.name if point.dist else '?'}"
                self._entries.setdefault(point.name, Entry(point.name, point.value, source))
            self._plugins_loaded = True
