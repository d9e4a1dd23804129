"""Registry of grader kinds, filled by `register_grader` and the "termgym.graders" entry points."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from termgym.errors import GraderError, UnknownGraderKind
from termgym.grading._base import Grader

ENTRY_POINT_GROUP = "termgym.graders"
"""Installed packages add grader kinds by naming "module:attr" under this entry-point group."""


@dataclass
class GraderKindSpec:
    """A registered grader kind: its name and where its implementation lives."""

    kind: str
    entry_point: str | Any
    source: str = "register"
    _loaded: Grader | None = None

    def load(self) -> Grader:
        """Import (once) and instantiate the kind's implementation."""
        if self._loaded is None:
            target = self.entry_point
            if isinstance(target, str):
                module_name, _, attr = target.partition(":")
                target = getattr(importlib.import_module(module_name), attr)
            loaded = target() if isinstance(target, type) else target
            if not isinstance(loaded, Grader):
                raise GraderError(
                    f"grader kind {self.kind!r} ({self.source}): expected an "
                    f"object with job() and read(), found {loaded!r}"
                )
            self._loaded = loaded
        return self._loaded


_registry: dict[str, GraderKindSpec] = {}
_entry_points_loaded = False


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _registry.setdefault(
            ep.name, GraderKindSpec(ep.name, ep.value, source=f"entry point {ep.name}")
        )


def register_grader(kind: str, entry_point: str | Any, *, override: bool = False) -> None:
    """Register a grader kind.

    Args:
        kind: The name task.yaml uses in `kind:`.
        entry_point: A "module:attr" string (imported lazily), a Grader class or instance.
        override: Replace an existing kind of the same name instead of raising.
    """
    _load_entry_points()
    if kind in _registry and not override:
        raise ValueError(
            f"grader kind {kind!r} is already registered "
            f"({_registry[kind].source}); pass override=True to replace it"
        )
    _registry[kind] = GraderKindSpec(kind, entry_point)


def unregister_grader(kind: str) -> None:
    """Remove a grader kind (tests use this to clean up)."""
    _registry.pop(kind, None)


def grader_kinds() -> list[str]:
    """Every registered grader kind, sorted."""
    _load_entry_points()
    return sorted(_registry)


def grader_kind(kind: str) -> Grader:
    """The implementation of a grader kind.

    Raises:
        UnknownGraderKind: no kind of that name; the message suggests close names.
    """
    _load_entry_points()
    spec = _registry.get(kind)
    if spec is None:
        close = difflib.get_close_matches(kind, list(_registry), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownGraderKind(
            f"unknown grader kind {kind!r}: expected one of {sorted(_registry)}.{hint}"
        )
    return spec.load()
