"""termgym: Gymnasium environments over terminal tasks with mutable hidden graders."""

from __future__ import annotations

from termgym.errors import TermgymError

__version__ = "0.1.0"

__all__ = ["TermgymError", "__version__"]
