"""termgym's version, in a leaf module: recordings and run headers name it without importing
the package's facade."""

from __future__ import annotations

__version__ = "0.1.0"
