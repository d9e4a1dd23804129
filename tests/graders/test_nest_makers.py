"""A nest is made by the launcher's make mode (a small static program started by
posix_spawn) where the grading folder has the launcher, else by a fork of the runner that
runs the Python maker. Both take the same layout (`termgym_nest._layout`, worked out by
the runner), so a program in the nest must find the same view either way: the same mounts
with the same options, its writable folders writable, the hidden folder empty and
read-only (what it covers held for what the tests hand), every other mount read-only, a
fresh /dev/shm.
A layout step the launcher cannot take is the nest's error, said with its reason.

Run here, as root, in a fresh interpreter per nest, against the modules the verifier
imports (`termgym_nest` and its `termgym_kernel`) and a copy of the launcher, as a grading
folder holds them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from termgym.grading._launcher import LAUNCHER
from termgym.verifier import KERNEL, NEST

AGENT = 60000

PROBE = r"""
import json, os, sys
places = json.loads(sys.argv[1])

def write(folder):
    try:
        with open(os.path.join(folder, "probe"), "w") as handle:
            handle.write("x")
        return "written"
    except OSError as exc:
        return exc.errno

mounts = []
with open("/proc/self/mountinfo") as handle:
    for line in handle:
        fields = line.split()
        rest = fields[fields.index("-") + 1 :]
        mounts.append([fields[4], fields[5], rest[0], rest[2] if len(rest) > 2 else ""])
print(json.dumps({
    "mounts": sorted(mounts),
    "writable": write(places["writable"]),
    "hidden": sorted(os.listdir(places["hidden"])),
    "hidden_write": write(places["hidden"]),
    "other": write(places["other"]),
    "shm": write("/dev/shm"),
    "ids": [os.getuid(), os.getgid()],
    "pid": os.getpid(),
}))
"""

MAKE = r"""
import importlib.util, json, os, subprocess, sys
nest_py, kernel_py, launcher_path, spec, places, steps, PYTHON = json.loads(sys.argv[1])
for name, path in (("termgym_kernel", kernel_py), ("termgym_nest", nest_py)):
    loaded = importlib.util.spec_from_file_location(name, path)
    nest_module = sys.modules[name] = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(nest_module)
if steps is not None:  # a layout of the test's own in place of the runner's
    nest_module._layout = lambda spec: [tuple(step) for step in steps]
launcher = os.open(launcher_path, os.O_RDONLY | os.O_CLOEXEC) if launcher_path else -1
try:
    nest = nest_module.Nest(spec, launcher)
except OSError as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(0)
try:
    probe = subprocess.run(
        [PYTHON, "-I", "-c", sys.argv[2], json.dumps(places)],
        preexec_fn=nest.entry("/", spec["uid"]), capture_output=True, text=True, timeout=60,
    )
    if probe.returncode != 0:
        print(json.dumps({"probe": probe.stderr}))
    else:
        print(json.dumps(dict(json.loads(probe.stdout), held=sorted(nest.trees))))
finally:
    nest.close()
"""


@pytest.fixture(scope="module")
def launcher(launcher_folder: Path) -> Path:
    """The launcher's copy, as a grading folder holds it."""
    return launcher_folder / LAUNCHER


@pytest.fixture
def places() -> Iterator[dict[str, str]]:
    """A folder the agent's user may write, a hidden one (the grading's, with files), and one
    left out of both, open to every user."""
    root = Path(tempfile.mkdtemp(prefix="termgym-nest-places-"))
    root.chmod(0o755)
    try:
        writable, hidden, other = root / "work", root / "grading", root / "other"
        for folder in (writable, hidden, other):
            folder.mkdir()
        os.chown(writable, AGENT, AGENT)
        other.chmod(0o777)
        (hidden / "kept").write_text("the grading's own\n")
        hidden.chmod(0o755)
        yield {
            "writable": str(writable),
            "hidden": str(hidden),
            "other": str(other),
        }
    finally:
        shutil.rmtree(root)


def _in_a_nest(
    launcher: Path | None, places: dict[str, str], steps: list[Any] | None = None
) -> dict[str, Any]:
    spec = {"writable": [places["writable"]], "hidden": [places["hidden"]], "uid": AGENT}
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    argument = json.dumps(
        [str(NEST), str(KERNEL), str(launcher or ""), spec, places, steps, python]
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", MAKE, argument, PROBE],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _own(seen: dict[str, Any], places: dict[str, str]) -> dict[str, Any]:
    """A nest's view less the mounts the host made meanwhile: the nest's table is the host's
    (its folders bound read-only), which other work on the machine changes between the two
    nests (a bwrap episode's overlays in termgym's cache come and go). What the nest itself
    decides is kept: the root, /dev/shm, and every mount at or below the test's folders."""
    root = os.path.dirname(places["writable"])
    own = [m for m in seen["mounts"] if m[0] in ("/", "/dev/shm") or m[0].startswith(root)]
    return {**seen, "mounts": own}


def test_both_makers_give_a_program_the_same_view(launcher: Path, places: dict[str, str]) -> None:
    by_launcher = _in_a_nest(launcher, places)
    by_fork = _in_a_nest(None, places)
    assert "error" not in by_launcher and "probe" not in by_launcher, by_launcher
    assert "error" not in by_fork and "probe" not in by_fork, by_fork
    assert _own(by_launcher, places) == _own(by_fork, places)
    seen = by_launcher
    assert seen["writable"] == "written"
    assert seen["hidden"] == []  # nothing of the grading's
    assert seen["held"] == [places["hidden"]]  # what it covers, held for what tests hand
    assert seen["hidden_write"] == 30  # EROFS: the cover is read-only
    assert seen["other"] == 30  # every mount but the writable ones is read-only
    assert seen["shm"] == "written"
    assert seen["ids"] == [AGENT, AGENT]
    assert seen["pid"] > 1  # in the nest's pid namespace, below its init
    options = {point: opts for point, opts, _, _ in seen["mounts"]}
    assert options[places["hidden"]].startswith("ro,")
    assert options[places["writable"]].startswith("rw")
    assert options["/"].startswith("ro")


@pytest.mark.parametrize(
    ("step", "said"),
    [
        (["X", 0, "/"], "a step of the layout X 0 /: Invalid argument"),
        (["B", 0, "/termgym-nowhere"], "mount (bind) /termgym-nowhere: No such file"),
    ],
)
def test_a_step_the_launcher_cannot_take_is_the_nests_error(
    launcher: Path, places: dict[str, str], step: list[Any], said: str
) -> None:
    got = _in_a_nest(launcher, places, steps=[step])
    assert "a nest could not be made" in got.get("error", ""), got
    assert said in got["error"], got
