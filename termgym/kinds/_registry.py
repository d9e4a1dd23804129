"""The registry of grader kinds: `register_grader` and the "termgym.graders" entry points.

The names follow the one scheme of every registry (`register_X`, `unregister_X`,
`registered_Xs`, `make_X`, docs/architecture.md), without `grader_spec`: `GraderSpec` is
a task's grader entry, and `registry.entry(kind)` is the registered one.
"""

from __future__ import annotations

import threading
from typing import Any

from termgym._registry import Registry
from termgym.errors import GraderError, UnknownGraderKind
from termgym.kinds._base import Grader

ENTRY_POINT_GROUP = "termgym.graders"
"""Installed packages add grader kinds by naming "module:attr" under this entry-point group."""

registry: Registry[Any] = Registry(
    "grader kind",
    ENTRY_POINT_GROUP,
    UnknownGraderKind,
    miss="unknown grader kind {name!r}: expected one of {listed}.{hint}",
)
_instances: dict[str, Grader] = {}
_instances_lock = threading.Lock()  # one instance per kind, whichever thread asks first


def register_grader(kind: str, entry_point: str | Any, *, override: bool = False) -> None:
    """Register a grader kind.

    Args:
        kind: The name task.yaml uses in `kind:`.
        entry_point: A "module:attr" string (imported lazily), a Grader class or instance.
        override: Replace an existing kind of the same name instead of raising.
    """
    registry.register(kind, entry_point, override=override)
    with _instances_lock:
        _instances.pop(kind, None)


def unregister_grader(kind: str) -> None:
    """Remove a grader kind (tests use this to clean up)."""
    registry.unregister(kind)
    with _instances_lock:
        _instances.pop(kind, None)


def registered_graders() -> list[str]:
    """Every registered grader kind, plugins included, sorted."""
    return registry.names()


def make_grader(kind: str) -> Grader:
    """The implementation of a grader kind: made once, then shared (a Grader keeps no
    state of an episode).

    Raises:
        UnknownGraderKind: no kind of that name; the message suggests close names.
        GraderError: the registered object is not a Grader.
    """
    found = _instances.get(kind)
    if found is not None:
        return found
    with _instances_lock:
        if kind not in _instances:
            target = registry.load(kind)
            loaded = target() if isinstance(target, type) else target
            if not isinstance(loaded, Grader):
                raise GraderError(
                    f"grader kind {kind!r} ({registry.entry(kind).source}): expected an "
                    f"object with job() and read(), found {loaded!r}"
                )
            _instances[kind] = loaded
        return _instances[kind]
