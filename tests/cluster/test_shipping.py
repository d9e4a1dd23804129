"""Task folders travel to nodes as content-hashed bundles and resolve by id there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from termgym._task_paths import task_dirs
from termgym.cluster import bundle_task, unpack_bundles
from termgym.errors import TaskError
from tests.cluster.conftest import EXAMPLE_TASKS


def test_a_bundle_is_named_by_its_content_and_unpacks_to_the_same_files(
    tmp_path, monkeypatch
) -> None:
    import termgym._task_paths

    monkeypatch.setattr(termgym._task_paths, "_added", [])  # this process's other tests
    source = Path(EXAMPLE_TASKS) / "cargo-limit"
    first, again = bundle_task("cargo-limit", source), bundle_task("cargo-limit", source)
    assert first.digest == again.digest and first.data == again.data  # stable: no times, owners
    (folder,) = unpack_bundles([first], cache=tmp_path / "cache")
    expected = sorted(p.relative_to(source) for p in source.rglob("*") if p.is_file())
    assert sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file()) == expected
    assert (folder / "task.yaml").read_bytes() == (source / "task.yaml").read_bytes()
    assert task_dirs()["cargo-limit"] == folder  # the shipped copy resolves by id, first
    unpack_bundles([first], cache=tmp_path / "cache")  # a second unpack is a no-op
    assert len(list((tmp_path / "cache").iterdir())) == 1


def test_a_changed_task_ships_under_a_new_name(tmp_path) -> None:
    copy = tmp_path / "cargo-limit"
    shutil.copytree(Path(EXAMPLE_TASKS) / "cargo-limit", copy)
    before = bundle_task("cargo-limit", copy).digest
    (copy / "files" / "policy.txt").write_text("max_weight: 999\n")
    assert bundle_task("cargo-limit", copy).digest != before


def test_a_task_too_large_to_ship_is_refused_with_its_size(tmp_path, monkeypatch) -> None:
    import termgym.cluster._shipping as shipping

    monkeypatch.setattr(shipping, "MAX_BUNDLE_BYTES", 100)
    with pytest.raises(TaskError, match=r"packs to [\d,]+ bytes; expected at most 100"):
        bundle_task("cargo-limit", Path(EXAMPLE_TASKS) / "cargo-limit")
