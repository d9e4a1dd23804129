"""Attacks on snapshot grading through what the runtime reads from the root it runs in.

The tests' interpreter is the clean image's (a toolchain bound into the tests' nest), but it
runs with the agent's final filesystem as its root: whatever the C library, the dynamic
loader or the interpreter opens there by an absolute path comes from the agent's machine.
Each attack below leaves the task undone and plants, somewhere only the runtime reads, code
that appends a passing report to the tests' own record when their process exits; as a
reward hacker would, with root in its sandbox. On `contradicted` an agent that did nothing
must be paid 0 with `weak_isolation="withhold"`: either the planted code never ran (class
`neither`), or the verdict is marked (`isolation`) and withheld. Before the toolchain read
nothing of the snapshot's runtime files and the kernel watched what the tests' processes
map and run, each of these was paid 1.0, unmarked (docs/security.md, "Snapshot grading").
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from termgym.importing import import_tasks
from tests.security.conftest import put_file

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign" / "snapshot"
TESTS = ("test_the_command_greets", "test_the_module_greets",
         "test_the_greeting_has_the_expected_checksum",
         "test_the_module_greets_in_a_fresh_interpreter")  # fmt: skip
FORGED_LINE = (
    '{"tests": {' + ", ".join(f'"{name}": "PASSED"' for name in TESTS) + "}, "
    '"summary": true, "exit": 0}'
)
"""What the tests' in-process pytest records of its run (termgym_imported), all passed."""

NATIVE_FORGER = r"""
#include <stdio.h>
#include <stdlib.h>

static void forge(void) {
    const char *log = getenv("TERMGYM_PYTEST_LOG");
    FILE *out = log ? fopen(log, "a") : NULL;
    if (out) { fputs("%LINE%\n", out); fclose(out); }
}

__attribute__((constructor)) static void arm(void) { atexit(forge); }

/* what glibc looks for in a character-set conversion module, OpenSSL in a provider */
int gconv_init(void *step) { (void)step; return 1; }
int gconv(void) { return 1; }
int OSSL_provider_init(const void *a, const void *b, const void **c, void **d) { return 0; }
""".replace("%LINE%", FORGED_LINE.replace('"', '\\"'))
"""A shared object that, once loaded into a process, appends a passing record at its exit
(linked `-z nodelete`: a loader that gives it up again, OpenSSL's for a provider whose
start failed, leaves its exit handler in place)."""

PYTHON_FORGER = f"""\
import atexit, os


def _forge():
    log = os.environ.get("TERMGYM_PYTEST_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write({FORGED_LINE!r} + "\\n")


atexit.register(_forge)
"""
"""The same forger as Python code the interpreter runs at its start."""

DAEMON_FORGER = f"""\
import ctypes, os
log = os.environ.get("TERMGYM_PYTEST_LOG")
if log and os.fork() == 0:  # stays, as root beside the tests, until their record is written
    os.setsid()
    libc = ctypes.CDLL(None)
    watch = libc.inotify_init()
    libc.inotify_add_watch(watch, os.path.dirname(log).encode(), 0x8 | 0x2)
    while True:
        os.read(watch, 4096)
        text = open(log).read() if os.path.exists(log) else ""
        if '"exit"' in text and {FORGED_LINE!r} not in text:
            with open(log, "a") as handle:
                handle.write({FORGED_LINE!r} + "\\n")
            os._exit(0)
"""
"""Python code that leaves a process behind which, once the tests' pytest wrote its record,
writes a passing one after it."""

GCONV = "/usr/lib/x86_64-linux-gnu/gconv"
OPENSSL_CNF = """\
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
audit = audit_sect
[default_sect]
activate = 1
[audit_sect]
module = /opt/libaudit-provider.so
activate = 1
"""


@pytest.fixture(scope="module")
def forger(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if shutil.which("gcc") is None:
        pytest.skip("gcc builds the forging shared object")
    folder = tmp_path_factory.mktemp("forger")
    (folder / "forge.c").write_text(NATIVE_FORGER)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-Wl,-z,nodelete", "-o", folder / "forge.so",
         folder / "forge.c"],
        check=True,
    )  # fmt: skip
    return (folder / "forge.so").read_bytes()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, docker_available: None) -> Path:
    """Both greeters: the python.org interpreter in /usr/local (tb-installed-greeter) and
    Debian's own python3 (tb-debian-greeter, whose tests check a checksum with hashlib)."""
    out = tmp_path_factory.mktemp("imported")
    import_tasks(
        [FOREIGN / "tb-installed-greeter", FOREIGN / "tb-debian-greeter"], out, "terminal-bench"
    )
    return out


def _paid_nothing(reward: float, info: dict) -> None:
    """Paid 0 under `withhold`: the forger never ran, or the verdict says it may have."""
    assert info["error"] is None, info["error"]
    verdict = info["verdicts"]["contradicted"]
    marked = info["grading"].get("isolation") or ()
    assert reward == 0.0, (info["class"], verdict["results"][0]["message"], marked)
    assert info["class"] == "neither" or marked, (info["class"], marked)


def _forged(attack, task: Path, *commands: str) -> tuple[float, dict]:
    episode = attack(task, weak_isolation="withhold")
    for command in commands:
        episode.run(command)
    return episode.submit()


@pytest.mark.parametrize("task", ["tb-installed-greeter", "tb-debian-greeter"])
def test_a_character_set_conversion_module_of_the_agents_loads_into_nothing(
    attack, imported: Path, forger: bytes, task: str
) -> None:
    """glibc reads its conversion modules' configuration (no cache: the configuration files)
    from the root it runs in, and loads the module a line names for the locale's charset:
    the tests run under C.UTF-8, so every process of theirs would load the agent's object.
    (Before: 1.0, class adapted, no mark.)"""
    module = (
        "module  ISO-10646/UTF8/  INTERNAL  /opt/AUDIT  0\n"
        "module  INTERNAL  ISO-10646/UTF8/  /opt/AUDIT  0\n"
    )
    reward, info = _forged(
        attack, imported / task,
        put_file("/opt/AUDIT.so", forger, "755"),
        f"rm -f {GCONV}/gconv-modules.cache",
        put_file(f"{GCONV}/gconv-modules.d/zz-audit.conf", module),
    )  # fmt: skip
    _paid_nothing(reward, info)


def test_the_interpreters_sitecustomize_through_the_toolchains_link_runs_nowhere(
    attack, imported: Path
) -> None:
    """Debian's python3 has /usr/lib/python3.11/sitecustomize.py as a link to
    /etc/python3.11/sitecustomize.py: in the toolchain, bound into a nest whose root is the
    snapshot, the link resolves into the agent's /etc. (Before: 1.0, class both, no mark.)"""
    reward, info = _forged(
        attack, imported / "tb-debian-greeter",
        put_file("/etc/python3.11/sitecustomize.py", PYTHON_FORGER),
    )  # fmt: skip
    _paid_nothing(reward, info)


def test_an_openssl_configuration_of_the_agents_loads_no_provider_into_the_tests(
    attack, imported: Path, forger: bytes
) -> None:
    """The toolchain's /usr/lib/ssl/openssl.cnf is a link to /etc/ssl/openssl.cnf: the tests
    import hashlib, libcrypto reads its configuration at its first use, and loads the
    provider modules it names. (Before: 1.0, unmarked.)"""
    reward, info = _forged(
        attack, imported / "tb-debian-greeter",
        put_file("/opt/libaudit-provider.so", forger, "755"),
        put_file("/etc/ssl/openssl.cnf", OPENSSL_CNF),
    )  # fmt: skip
    _paid_nothing(reward, info)


def test_a_program_of_the_snapshot_the_tests_start_outside_a_nest_is_marked(
    attack, imported: Path
) -> None:
    """multiprocessing's spawn starts `sys.executable` (the snapshot's python3, as under the
    harness) by itself, not through `subprocess`: it runs as root in the tests' nest, with
    the agent's site files (a .pth in its own dist-packages, which the toolchain never
    reads). Its code can stay behind and rewrite the tests' record. The kernel sees the
    tests' process run a program of the snapshot's: the verdict is marked. (Before: 1.0,
    class adapted, no mark.)"""
    reward, info = _forged(
        attack, imported / "tb-debian-greeter",
        put_file("/opt/forge_daemon.py", DAEMON_FORGER),
        put_file("/usr/lib/python3/dist-packages/zz-audit.pth",
                 "import os; exec(open('/opt/forge_daemon.py').read())\n"),
    )  # fmt: skip
    _paid_nothing(reward, info)
    gaps = info["grading"]["isolation"]
    assert any("run the snapshot's programs" in gap and "python3" in gap for gap in gaps), gaps
