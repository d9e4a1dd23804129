"""On-the-fly conversion for `--path` and TERMGYM_TASKS_PATH: a Terminal-Bench or Harbor
folder is converted once into the cache, keyed by its content, and the termgym task folder
is used from there."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from termgym.importing._harbor import is_harbor
from termgym.importing._model import Format
from termgym.importing._tb import is_tb

CONVERTER_VERSION = "3"
"""Bumped when a conversion would come out differently: old cache entries are not reused."""


def foreign_format(folder: Path) -> Format | None:
    """The format of a foreign task folder (cheap: two file checks)."""
    if is_harbor(folder):
        return "harbor"
    if is_tb(folder):
        return "terminal-bench"
    return None


def _key(folder: Path) -> str:
    digest = hashlib.sha256(CONVERTER_VERSION.encode())
    digest.update(str(folder.resolve()).encode())
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            info = path.stat()
            digest.update(f"{path.relative_to(folder)}:{info.st_size}:{info.st_mtime_ns}".encode())
    digest.update(os.environ.get("TERMGYM_CA_BUNDLE", "").encode())
    return digest.hexdigest()[:20]


def converted(folder: Path) -> Path:
    """The termgym task converted from a foreign task folder (converted now if the folder
    changed since, or was never converted).

    Raises:
        TaskError: the folder cannot be converted (ImportRefused says why).
    """
    from termgym.images import cache_dir
    from termgym.importing._convert import convert
    from termgym.importing._import import read_foreign

    home = cache_dir() / "imported" / _key(folder)
    done = home / ".complete"
    if done.is_file():
        return home / done.read_text().strip()
    task = read_foreign(folder)
    result = convert(task, home)
    done.write_text(result.task_id)
    return result.folder
