"""Overlay collections shipped with termgym: `--overlays tb2` names docs/overlays/tb2/ (a
copy inside a wheel), the overlays proven on Terminal-Bench 2.0 (docs/tb2.md)."""

from __future__ import annotations

import difflib
from pathlib import Path

from termgym.errors import TaskError

_SOURCE_TREE = Path(__file__).resolve().parents[2] / "docs" / "overlays"
_IN_WHEEL = Path(__file__).resolve().parents[1] / "_overlays"
BUNDLED_OVERLAYS = _SOURCE_TREE if _SOURCE_TREE.is_dir() else _IN_WHEEL
"""The bundled collections: docs/overlays/ in a checkout, termgym/_overlays in a wheel."""


def bundled_collections() -> dict[str, Path]:
    """Name -> folder of every bundled overlay collection (a folder of <task>.yaml)."""
    if not BUNDLED_OVERLAYS.is_dir():
        return {}
    return {
        p.name: p
        for p in sorted(BUNDLED_OVERLAYS.iterdir())
        if p.is_dir() and any(p.glob("*.yaml"))
    }


def overlay_folder(value: str | Path) -> Path:
    """The folder of overlays `value` names: a folder that exists, else a bundled
    collection's name (`tb2`).

    Raises:
        TaskError: neither (the bundled names are listed, the closest first).
    """
    path = Path(value)
    if path.is_dir():
        return path
    found = bundled_collections()
    if str(value) in found:
        return found[str(value)]
    close = difflib.get_close_matches(str(value), list(found), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TaskError(
        f"expected a folder of overlays (<task>.yaml each) or a bundled collection "
        f"({', '.join(found) or 'none installed'}), found neither at {value!r}{hint}"
    )
