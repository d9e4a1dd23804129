"""The root filesystems bwrap runs are made once per machine, whoever asks first: the
shifted copy of a root filesystem, asked for by several processes at once (an
AsyncVectorEnv's workers on a fresh machine), is copied by one of them, and the others
take that copy; none deletes the copy another made."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from termgym.isolation import mapped

pytestmark = pytest.mark.skipif(not mapped(), reason="shifted copies are made as root only")


def _ask(rootfs: str, barrier: multiprocessing.synchronize.Barrier, said: str) -> None:
    from termgym.images._build import shifted_rootfs

    barrier.wait()
    found = shifted_rootfs(Path(rootfs), log=lambda line: _append(said, line))
    _append(said, f"got {found} {(found / 'etc' / 'marker').read_text().strip()}")


def _append(path: str, line: str) -> None:
    with open(path, "a") as handle:
        handle.write(f"{os.getpid()} {line}\n")


def test_processes_asking_at_once_share_one_copy(tmp_path: Path) -> None:
    rootfs = tmp_path / "image" / "rootfs"
    for index in range(400):  # enough files that the copies would overlap in time
        folder = rootfs / "usr" / f"d{index % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index}").write_text("x" * 64)
    (rootfs / "etc").mkdir()
    (rootfs / "etc" / "marker").write_text("the image\n")
    said = str(tmp_path / "said.txt")
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    workers = [context.Process(target=_ask, args=(str(rootfs), barrier, said)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [worker.exitcode for worker in workers] == [0] * 4
    lines = Path(said).read_text().splitlines()
    copies = [line for line in lines if "Copying" in line]
    got = {line.split(" ", 2)[2] for line in lines if " got " in line}
    assert len(copies) == 1, lines
    (only,) = got
    assert only.endswith("/root the image"), only
    shifted = Path(only.split()[0])
    assert shifted.stat().st_uid != 0 and (shifted / "etc" / "marker").is_file()
    assert sorted(p.name for p in shifted.parent.parent.iterdir() if ".tmp" in p.name) == []
