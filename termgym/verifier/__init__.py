"""The verifier's side of grading: every file here runs inside the clean verifier, as source.

Trust. This code runs as root in a fresh sandbox of the task's clean image, beside the
agent's work, and its one report decides the verdict. It trusts only what the host put
there before any program of the agent's ran: the clean image (its interpreter, standard
library and pytest), the grading folder (the manifest, the task's graders, these files:
root's, mode 0700) and the report key, which reaches the runner on its stdin or exec
environment. Everything else is the adversary's: the work, every file and folder the
agent's user owns, every program of the agent's the graders start (anything but a grader's
own file), what those programs print and leave running, and the time they take.

One file is not Python: `nest_launch.c`, the nests' entry as a static program the host
compiles (`termgym.grading`) and copies in as `termgym_nest_launch`, where a C compiler is
found on the host; without it the Python entry (`nest.Nest.entry`) does the same.

One file runs before the verifier it serves exists: `zygote.py`, in a zygote (the sandbox
over the clean image a bwrap host starts once per standby spec, `termgym.sandbox._zygote`),
which clones each verifier's pid 1 into namespaces of its own and goes on there as its
standby runner; it reads nothing but its control socket, which the host alone holds
(`ZYGOTE_MODULES`). The kernel calls it shares with the nests are `kernel.py`'s. So every
namespace, mount, capability and seccomp call termgym makes inside a sandbox is in
`kernel.py`, `nest.py`, `nest_launch.c` and `zygote.py`.

What it must never do:
- import termgym, or anything but the standard library (and pytest, for the pytest
  kind's files): none of termgym's host code is installed in a verifier;
- run a program of the agent's as root, or with the rules or the key in its environment
  (`agentexec`: uid 60000, TERMGYM_* and PYTEST_* stripped, in a `nest`), or put a grader
  path on a command line every user can read;
- act by path, as root, on anything below a folder the agent's user can write (it acts by
  descriptor, without following links);
- let the report key reach a file or a job, or write anything but the one authenticated
  report line on the host's channel (`runner`);
- let the layout, names or order of a grading tell rule sets apart.

The host (`termgym.grading`) copies these files into each verifier under the names they are
imported by there (`INJECTED`), and believes nothing from a verifier but the report's
HMAC-checked line (docs/security.md). This package imports nothing of termgym, and nothing
of termgym imports these modules: the host reads them as files.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent

RUNNER = _HERE / "runner.py"
"""The grading runner: every grader job over every rule set, one report (`termgym_run.py`)."""
JOBS = _HERE / "jobs.py"
"""How the runner runs one grader job (a program, or a call) for its rule sets."""
AGENTEXEC = _HERE / "agentexec.py"
"""The privilege drop: every program the graders start runs as the agent's user."""
AGENTCODE = _HERE / "agentcode.py"
"""The guard: no code of the agent's loads into a root process of the grading."""
NEST = _HERE / "nest.py"
"""The sandbox each program of the agent's runs in during grading."""
KERNEL = _HERE / "kernel.py"
"""The kernel calls the nests and the zygote share: mounts, capabilities, the seccomp filter."""
ZYGOTE = _HERE / "zygote.py"
"""A zygote's side: forks each verifier's standby into a fresh verifier of its own."""
INPUTPRINT = _HERE / "inputprint.py"
"""The fingerprint of what each program of the agent's is given (`termgym check`)."""
SNAPSHOT = _HERE / "snapshot.py"
"""Snapshot grading: the clean toolchain the tests run with on the agent's filesystem."""
WATCH = _HERE / "watch.py"
"""Snapshot grading: what the tests' processes run, map and open, as the kernel sees it."""
PREPARE = _HERE / "prepare.py"
"""What a standby runner loads before any work exists."""
PYTEST_PLUGIN = _HERE / "pytest_plugin.py"
"""The pytest kind's plugin: the `rules` fixture, one run per rule set."""
PYTEST_PREPARE = _HERE / "pytest_prepare.py"
"""The pytest kind's tests, configured and collected by a standby runner."""
IMPORTED = _HERE / "imported.py"
"""The imported-tests kind: a Terminal-Bench or Harbor task's tests, as its harness runs them."""
CHECKS = _HERE / "checks.py"
"""The file, json and regex kinds' checks."""
NEST_LAUNCH = _HERE / "nest_launch.c"
"""The nest's entry as a small program (C: the host builds it, `termgym.grading`)."""

INJECTED: dict[str, Path] = {
    "termgym_run.py": RUNNER,
    "termgym_jobs.py": JOBS,
    "termgym_agentexec.py": AGENTEXEC,
    "termgym_agentcode.py": AGENTCODE,
    "termgym_nest.py": NEST,
    "termgym_kernel.py": KERNEL,
    "termgym_inputprint.py": INPUTPRINT,
    "termgym_snapshot.py": SNAPSHOT,
    "termgym_watch.py": WATCH,
    "termgym_prepare.py": PREPARE,
    "termgym_pytest.py": PYTEST_PLUGIN,
    "termgym_pytest_prepare.py": PYTEST_PREPARE,
    "termgym_imported.py": IMPORTED,
    "termgym_checks.py": CHECKS,
}
"""Each file's name in a verifier (the module it is imported as there) and its source here."""

ZYGOTE_MODULES: dict[str, Path] = {"termgym_kernel": KERNEL, "termgym_zygote": ZYGOTE}
"""What a zygote is given on its stdin after the runner's source, in this order: each module's
name there and its source here (`termgym.sandbox._zygote`; the runner's `_serve` loads them)."""

__all__ = [
    "AGENTCODE",
    "AGENTEXEC",
    "CHECKS",
    "IMPORTED",
    "INJECTED",
    "INPUTPRINT",
    "JOBS",
    "KERNEL",
    "NEST",
    "NEST_LAUNCH",
    "PREPARE",
    "PYTEST_PLUGIN",
    "PYTEST_PREPARE",
    "RUNNER",
    "SNAPSHOT",
    "WATCH",
    "ZYGOTE",
    "ZYGOTE_MODULES",
]
