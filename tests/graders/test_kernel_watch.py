"""The kernel's watch of snapshot grading's tests (termgym_watch), on a real kernel.

A nest is laid out as snapshot grading lays out the tests' nest (`termgym_snapshot.
tests_nest`): its root a folder standing for the agent's filesystem, this machine's root
bound in as the toolchain. A program run there by the toolchain's python, armed with the
watch as the runner arms the tests' process, imports, maps and runs what an agent could
leave; the findings the supervisor wrote are read back. The toolchain's root-removal
(masks, variables, `-S`) is not in play here: this is what the kernel sees whatever the
runtime reads, the mark that stays when a route is not closed.

Run here, as root, in a fresh interpreter, against the modules the verifier imports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from termgym.sandbox import watch_filter
from termgym.verifier import INJECTED
from tests.conftest import _unavailable

DRIVER = textwrap.dedent(
    """
    import json, os, subprocess, sys
    injected, snapshot, listing, program, child = sys.argv[1:6]
    sys.path.insert(0, injected)
    import termgym_nest, termgym_snapshot as snap, termgym_watch
    graders, results, scratch = (os.path.join(injected, n) for n in ("g", "r", "s"))
    for folder in (graders, results, scratch):
        os.makedirs(folder, exist_ok=True)
    spec = snap.tests_nest(snapshot, graders, results, scratch, list(range(41)))
    nest = termgym_nest.Nest(spec)
    changed = snap.Changed(listing)
    layout = termgym_watch.Layout(
        os.fstat(nest.fds["pid"]).st_ino, changed.is_agents, ["/app"], snapshot
    )
    with open(program, "rb") as handle:
        watch = termgym_watch.Watch(handle.read(), layout)
    enter, arm = nest.entry("/", 0), watch.preexec()

    def preexec():
        enter()
        arm()

    python = snap.Toolchain(sys.executable).python_argv()
    done = subprocess.run(python + ["-I", "-c", child], preexec_fn=preexec,
                          capture_output=True, text=True, timeout=60)
    nest.close()
    print(json.dumps({"findings": watch.finish(), "out": done.stdout, "err": done.stderr}))
    """
)

CHILD = textwrap.dedent(
    """
    import ctypes, os, sys
    sys.path.insert(0, "/opt")
    import clean_module          # the image's: nothing to say
    import agents_module         # the agent's: loaded
    open("/app/solution.py").read()  # the work, read as data: nothing to say
    if os.path.exists("/opt/libagent.so"):
        ctypes.CDLL("/opt/libagent.so")  # the agent's shared object: mapped
    try:
        os.execv("/usr/local/bin/tool", ["tool"])  # a program of the snapshot's: ran
    except OSError:
        pass
    os.rename("/opt/other_module.py", "/opt/clean_module.py")  # swapped after its use
    print("done")
    """
)


@pytest.fixture
def snapshot() -> Iterator[tuple[Path, Path]]:
    """A folder standing for the agent's filesystem: the image's files, then the agent's
    (listed as the host lists them), and the listing."""
    if os.geteuid() != 0:
        _unavailable("The verifier's modules as root", "they map ids and pivot: run as root")
    root = Path(tempfile.mkdtemp(prefix="termgym-watch-"))
    root.chmod(0o755)
    try:
        snap = root / "snapshot"
        for folder in ("opt", "app", "usr/local/bin"):
            (snap / folder).mkdir(parents=True)
        (snap / "opt" / "clean_module.py").write_text("WORD = 'clean'\n")
        (snap / "opt" / "other_module.py").write_text("WORD = 'swapped in'\n")
        time.sleep(0.05)  # the listing begins after the image's files were made
        listing = root / "termgym_changed.txt"
        listing.write_text(f"since {time.time()}\n/opt/agents_module.py\n/opt/libagent.so\n")
        time.sleep(0.05)
        (snap / "opt" / "agents_module.py").write_text("WORD = 'the agent'\n")
        (snap / "app" / "solution.py").write_text("print('the work')\n")
        (snap / "usr/local/bin/tool").write_text("#!/bin/sh\necho tool\n")
        (snap / "usr/local/bin/tool").chmod(0o755)
        if shutil.which("gcc"):
            source = root / "agent.c"
            source.write_text("int agent_value(void) { return 1; }\n")
            subprocess.run(
                ["gcc", "-shared", "-fPIC", "-o", snap / "opt" / "libagent.so", source],
                check=True,
            )
        yield snap, listing
    finally:
        shutil.rmtree(root)


def _watched(snapshot: tuple[Path, Path], program: bytes) -> dict[str, object]:
    snap, listing = snapshot
    injected = snap.parent / "injected"
    injected.mkdir()
    for name in ("termgym_nest.py", "termgym_kernel.py", "termgym_snapshot.py", "termgym_watch.py"):
        (injected / name).write_text(INJECTED[name].read_text())
    (injected / "filter.bpf").write_bytes(program)
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    done = subprocess.run(
        [python, "-I", "-c", DRIVER, str(injected), str(snap), str(listing),
         str(injected / "filter.bpf"), CHILD],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _findings(text: str) -> set[tuple[str, str]]:
    return {tuple(line.split("\t", 1)) for line in text.splitlines()}  # type: ignore[misc]


def test_the_kernel_sees_the_agents_code_the_tests_load_map_and_run(
    snapshot: tuple[Path, Path],
) -> None:
    seen = _watched(snapshot, watch_filter())
    assert "done" in seen["out"], seen["err"]
    found = _findings(str(seen["findings"]))
    assert ("loaded", "/opt/agents_module.py") in found, found
    assert ("ran", "/usr/local/bin/tool") in found, found
    assert ("changed", "/opt/clean_module.py") in found, found
    if (snapshot[0] / "opt" / "libagent.so").exists():
        assert ("mapped", "/opt/libagent.so") in found, found
    # the image's module, the work read as data, the toolchain's own files: nothing
    assert not any("clean_module" in p and k != "changed" for k, p in found), found
    assert not any(p.startswith(("/app/", "/.termgym/")) for _, p in found), found


def test_a_watch_that_cannot_be_armed_says_so(snapshot: tuple[Path, Path]) -> None:
    """A filter the kernel refuses (here: none at all) leaves the tests running unwatched,
    and the findings say it: the host marks such a verdict."""
    seen = _watched(snapshot, b"")
    assert "done" in seen["out"], seen["err"]
    kinds = {kind for kind, _ in _findings(str(seen["findings"]))}
    assert kinds == {"unwatched"}, seen["findings"]
