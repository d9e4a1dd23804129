"""Work that is too much to copy is the agent's failure, and costs the host no more than its limits.

A tree deeper than its task allows, more files than it allows, a sparse file as large as its
disk limit, an allocation past the limit: each ends as reward 0 with the class the design
gives it (a counted `grader-error` when the work cannot be graded), never as an
infrastructure error, and the host's memory and disk stay bounded by what the copy measured:
the spools' allocated blocks and this process's peak resident memory, not the time taken.
The target is `tasks/hoarder` (the adversary task with a 1200 MiB disk and at most 3000
files, 64 folders deep), and `tasks/adversary` (64 MiB) for the allocation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import termgym.grading._runner as runner
from termgym.sandbox import HoleSpool
from tests.security.conftest import ADVERSARY

HOARDER = ADVERSARY.parent / "hoarder"
MIB = 1 << 20


class _Measured(HoleSpool):
    """A spool that records the disk it held when it was closed."""

    peak = 0

    def close(self) -> None:
        if not self.closed:
            _Measured.peak = max(_Measured.peak, self.allocated())
        super().close()


@pytest.fixture
def spools(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Measured]]:
    """Every spool grading makes records its allocated size."""
    _Measured.peak = 0
    monkeypatch.setattr(runner, "HoleSpool", _Measured)
    yield _Measured


def _reset_peak_memory() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from VmRSS


def _peak_memory() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def _resident() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _the_run_goes_on(episode) -> None:  # noqa: ANN001
    """The same env starts its next episode and runs a command in it."""
    episode.env.reset(seed=1)
    assert episode.run("echo next")["obs"]["output"].strip() == "next"


def test_a_tree_deeper_than_the_task_allows_is_a_counted_grader_error(attack, spools) -> None:
    episode = attack(HOARDER, variant="original")
    made = episode.run(
        "cd /app && python3 -c \"import os\nfor _ in range(1100): os.mkdir('d'); os.chdir('d')\""
        " && echo made"
    )
    assert made["obs"]["output"].strip().endswith("made")
    reward, info = episode.submit()
    assert (reward, info["class"]) == (0.0, "grader-error")
    assert "limits.work_depth" in info["error"], info["error"]
    assert spools.peak < 4 * MIB  # the walk stopped at the 65th folder
    _the_run_goes_on(episode)


def test_more_files_than_the_task_allows_is_a_counted_grader_error(attack, spools) -> None:
    episode = attack(HOARDER, variant="original")
    made = episode.run(
        'mkdir -p /app/many && cd /app/many && python3 -c "\n'
        "for i in range(5000): open(str(i), 'w').close()\" && ls | wc -l"
    )
    assert made["obs"]["output"].strip().splitlines()[-1] == "5000"
    reward, info = episode.submit()
    assert (reward, info["class"]) == (0.0, "grader-error")
    assert "limits.work_files" in info["error"], info["error"]
    assert spools.peak < 4 * MIB  # 3000 entries of 512 bytes at most, then it stopped
    _the_run_goes_on(episode)


def test_a_sparse_file_as_large_as_the_disk_costs_the_host_neither_memory_nor_disk(
    attack, spools
) -> None:
    """A 1 GiB file that holds no data: graded like any work (it is within the limit), but
    it travels as holes. Before, the archive was read whole into memory (1 GiB) and spooled
    on disk twice."""
    episode = attack(HOARDER, variant="original")
    made = episode.run("truncate -s 1G /app/sparse.bin && du -k /app/sparse.bin")
    assert int(made["obs"]["output"].split()[0]) < 1024  # it holds no blocks in the sandbox
    before = _resident()
    _reset_peak_memory()
    reward, info = episode.submit()
    grown = _peak_memory() - before
    assert (reward, info["error"]) == (0.0, None), info
    assert grown < 200 * MIB, f"grading held {grown / MIB:.0f} MiB more than before"
    assert spools.peak < 16 * MIB, f"a spool held {spools.peak / MIB:.0f} MiB of disk"
    _the_run_goes_on(episode)


def test_allocating_past_the_disk_limit_takes_no_more_than_the_limit(attack, backend: str) -> None:
    """`fallocate` takes blocks without writing them: a watchdog that polls sees them only
    after the host's disk gave them. A filesystem of the limit's size refuses them."""
    episode = attack(ADVERSARY, variant="original")
    sandbox = episode.env.episode.sandbox
    bound = getattr(sandbox, "disk_limit", "filesystem")  # bwrap: its tmpfs
    if bound == "watchdog":
        pytest.skip("this engine's disk limit is a poll (docs/security.md): not a bound")
    step = episode.run("fallocate -l 8G /app/big; echo status=$?")
    output = step["obs"]["output"]
    # refused by the filesystem, or (docker) past the file size limit every agent's process
    # has, the disk limit: SIGXFSZ, which fallocate does not ignore
    assert "status=1" in output or "status=153" in output, output
    refusals = ("No space left on device", "Disk quota exceeded", "File size limit exceeded")
    assert any(refusal in output for refusal in refusals), output
    held = _held_on_host(sandbox, backend)
    assert held <= 80 * MIB, f"the sandbox holds {held / MIB:.0f} MiB of the host's disk"
    reward, info = episode.submit()
    assert reward == 0.0 and info["class"] in (None, "neither", "grader-error")
    _the_run_goes_on(episode)


def _held_on_host(sandbox, backend: str) -> int:  # noqa: ANN001
    """What the sandbox's writable layer takes of the host: its tmpfs (bwrap), the blocks
    of its layer's image (docker) or of the engine's quota'd layer."""
    if backend == "bwrap":
        found = os.statvfs(Path(sandbox.home) / "disk")
        return (found.f_blocks - found.f_bfree) * found.f_frsize
    if sandbox.layer_disk is not None:
        return os.stat(sandbox.layer_disk.image).st_blocks * 512
    upper = sandbox.container.attrs["GraphDriver"]["Data"]["UpperDir"]
    from termgym.isolation import usage

    return usage(Path(upper), 1 << 40)[0]
