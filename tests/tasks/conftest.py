"""Fixtures for task tests: a valid task folder to break one field at a time, Docker."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


@pytest.fixture
def task_folder(tmp_path: Path) -> Callable[..., Path]:
    """Copy the tiny-limit fixture task, apply changes to its spec and files, return its folder.

    `spec` entries replace top-level fields (None deletes one); `rules` entries are merged
    into rule `limit`; `files` maps workspace paths to new content (None deletes).
    """

    def make(
        spec: dict[str, Any] | None = None,
        rule: dict[str, Any] | None = None,
        files: dict[str, str | None] | None = None,
        name: str = "tiny-limit",
    ) -> Path:
        folder = tmp_path / name
        shutil.copytree(FIXTURES / "tiny-limit", folder)
        data = yaml.safe_load((folder / "task.yaml").read_text())
        data["id"] = name
        for key, value in (spec or {}).items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        for key, value in (rule or {}).items():
            if value is None:
                data["rules"]["limit"].pop(key, None)
            else:
                data["rules"]["limit"][key] = value
        (folder / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        for rel, content in (files or {}).items():
            target = folder / "files" / rel
            if content is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content)
        return folder

    return make


@pytest.fixture(scope="session")
def docker_engine(base_image: str) -> None:
    """A Docker engine with the base image (built if missing); skipped, or failed with CI=true,
    when no engine answers (the shared `base_image` fixture decides)."""
