"""Runs inside the verifier: snapshot grading's toolchain, and what the tests load.

Injected beside the runner as the module `termgym_snapshot` (stdlib only, Python 3.7+).

When a task is graded on the agent's whole final filesystem (`grading.filesystem:
snapshot`), its tests run in a nest whose root is that snapshot (termgym_nest), as the
task's harness runs them on the agent's machine. What runs them comes from the verifier's
clean image, bound read-only into the nest at TOOLCHAIN and started through that image's
own dynamic loader (`Toolchain`): the interpreter, its standard library, pytest and bash
never come from the snapshot, whatever the agent replaced there (its python3, its loader,
/etc/ld.so.preload, a sitecustomize or a fake pytest in its site-packages).

The toolchain reads nothing of the snapshot by an absolute path where a setting can point
it at its own files (`Toolchain.environment`, `Toolchain.masks`): the interpreter starts
without `site` (-S: no sitecustomize, no .pth file, which a link of the clean image could
lead into the snapshot: Debian's sitecustomize.py is a link to /etc/python3.X/); the C
library takes its locales from the toolchain (LOCPATH) and its character-set conversion
modules from the toolchain's folder, bound over the snapshot's in the tests' nest (no
variable replaces that folder: GCONV_PATH only comes first); OpenSSL its configuration,
providers and engines from the toolchain (OPENSSL_CONF, OPENSSL_MODULES, OPENSSL_ENGINES);
the loader its libraries from the toolchain's folders first, with no preload file. The
agent's programs the tests start get the image's values of those variables back
(`termgym_agentexec.agent_env`). What is left (a library only the snapshot has, which the
loader finds through the snapshot's cache; data files the C library reads) is watched by
the kernel (termgym_watch).

Inside the nest, `prepare_python()` (called first by the tests' interpreter) puts the
toolchain's site-packages and then the snapshot's on sys.path, so the tests import what the
agent installed, as they would under their harness, but keeps the standard library and
pytest (with what it needs) the toolchain's. And it records, in a file the agent's
programs cannot reach (`termgym_agentcode.watch_agent_code`), the first file of the
agent's (one it made or changed: the host lists them) that the test process loads, before
that file's code runs: such tests run the agent's code with the tests' own privileges, and
the host marks their verdict (docs/security.md). That record says which module; the
kernel's watch (termgym_watch) decides the mark whatever ran before it.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable
    from typing import Any

NEST_ROOT = "/.termgym"
"""Where termgym's folders are in the tests' nest (covered in the agent's programs' nests)."""
TOOLCHAIN = NEST_ROOT + "/toolchain"
"""The verifier's clean root, read-only, in the tests' nest."""
JOB = NEST_ROOT + "/job"
RESULTS = NEST_ROOT + "/results"
SCRATCH = NEST_ROOT + "/scratch"
CHANGED = "termgym_changed.txt"
"""The grading folder's list of what the agent made or changed (sandbox paths, one a line,
after header lines that are no path: termgym.grading._bundle.CHANGED)."""
LISTED_SINCE = "since "
LISTED_ALL = "everything"
AGENT_CODE = ".termgym-agent-code"
"""In a job's result files: the files of the agent's its tests loaded, one a line."""
AGENT_CODE_FD = "TERMGYM_AGENT_CODE_FD"
"""In the tests' environment: the pipe the record goes to, whose other end the runner reads
(outside the tests' process and nest: the agent's code, once loaded there, could rewrite
a file of the result folder, never what it already wrote to the runner)."""
PINNED = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py", "exceptiongroup",
          "tomli", "termgym_pytest", "termgym_agentexec", "termgym_agentcode", "termgym_nest",
          "termgym_kernel", "termgym_inputprint", "termgym_imported",
          "termgym_snapshot")  # fmt: skip
"""Top-level modules the tests' interpreter takes from the toolchain whatever the snapshot
holds: pytest and what it imports, and termgym's own (each of these imports no termgym
module but these: tests/graders/test_verifier_modules.py)."""
NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts")
"""Bound from the verifier into the tests' nest (docker writes them into each container)."""
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n"
"""The nest's /etc/nsswitch.conf: glibc loads the modules another one names from the
snapshot's library folders, into the toolchain's processes."""
IMAGE_ENV = "TERMGYM_IMAGE_ENV"
"""In the tests' environment: the values (JSON; null: unset) the toolchain's variables
(`Toolchain.environment`) had before, which the agent's programs get back."""


def _interpreter_of(path: str) -> str:
    """The ELF program interpreter (dynamic loader) an executable names."""
    import struct

    with open(path, "rb") as handle:
        head = handle.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            raise OSError(f"{path}: expected a 64-bit ELF executable")
        end = "<" if head[5] == 1 else ">"
        phoff = struct.unpack(end + "Q", head[32:40])[0]
        size, count = struct.unpack(end + "HH", head[54:58])
        for index in range(count):
            handle.seek(phoff + index * size)
            kind, _, offset, _, _, filesz = struct.unpack(end + "IIQQQQ", handle.read(40))
            if kind == 3:  # PT_INTERP
                handle.seek(offset)
                return handle.read(filesz).rstrip(b"\0").decode()
    raise OSError(f"{path}: no program interpreter (a static executable)")


class Toolchain:
    """The clean image's programs as the tests' nest starts them: `argv(program)` runs one
    through the image's own loader, with the image's library folders first, so no file of
    the snapshot's is on the way (only its /etc/ld.so.cache and system folders, searched
    after the toolchain's, for libraries the toolchain lacks); `environment()` and `masks()`
    point the C library and OpenSSL at the toolchain's own files."""

    def __init__(self, python: str) -> None:
        self.python = os.path.realpath(python)
        self.loader = os.path.realpath(_interpreter_of(self.python))
        machine = os.uname().machine
        folders = []
        for folder in ("/usr/local/lib", f"/lib/{machine}-linux-gnu",
                       f"/usr/lib/{machine}-linux-gnu", "/lib64", "/usr/lib64", "/lib",
                       "/usr/lib"):  # fmt: skip
            real = os.path.realpath(folder)
            if os.path.isdir(real) and real not in folders:
                folders.append(real)
        self.libraries = folders

    def argv(self, program: str) -> list[str]:
        """How the nest starts `program` (a path in the clean root) from the toolchain."""
        return [
            TOOLCHAIN + self.loader,
            "--library-path",
            ":".join(TOOLCHAIN + f for f in self.libraries),
            TOOLCHAIN + os.path.realpath(program),
        ]

    def python_argv(self) -> list[str]:
        """The tests' interpreter: without `site`, which would import sitecustomize and read
        .pth files through the image's links (prepare_python adds its site-packages)."""
        return self.argv(self.python) + ["-S"]

    def _found(self, name: str) -> str | None:
        """The first of the toolchain's library folders' `name` (a folder), or None."""
        for folder in self.libraries:
            if os.path.isdir(os.path.join(folder, name)):
                return os.path.join(folder, name)
        return None

    def environment(self) -> dict[str, str]:
        """Variables that make the toolchain's C library and OpenSSL read their files from the
        toolchain (paths in the tests' nest): locales, OpenSSL's configuration (the image's
        own file: /usr/lib/ssl/openssl.cnf is a link to /etc/ssl/openssl.cnf), providers and
        engines."""
        env = {}
        if os.path.isdir("/usr/lib/locale"):
            env["LOCPATH"] = TOOLCHAIN + os.path.realpath("/usr/lib/locale")
        for config in ("/usr/lib/ssl/openssl.cnf", "/etc/ssl/openssl.cnf",
                       "/etc/pki/tls/openssl.cnf", "/usr/local/ssl/openssl.cnf"):  # fmt: skip
            if os.path.isfile(config):
                env["OPENSSL_CONF"] = TOOLCHAIN + os.path.realpath(config)
                break
        else:
            env["OPENSSL_CONF"] = os.devnull  # none in the image: none from the snapshot
        for variable, name in (("OPENSSL_MODULES", "ossl-modules"),
                               ("OPENSSL_ENGINES", "engines-3")):  # fmt: skip
            found = self._found(name)
            env[variable] = TOOLCHAIN + found if found else "/nonexistent"
        return env

    def masks(self) -> list[str]:
        """Folders the C library reads by a path compiled into it, bound over the snapshot's
        from the toolchain in the tests' nest (paths in the clean root, the same there):
        the character-set conversion modules and their configuration."""
        found = self._found("gconv")
        return [found] if found else []

    def to_json(self) -> dict[str, Any]:
        return {"python": self.python_argv(), "bash": self.argv(_which("bash")),
                "mkdir": self.argv(_which("mkdir"))}  # fmt: skip


def tests_python() -> str:
    """The clean image's python3 as its PATH finds it: the interpreter the task's own script
    runs its tests with (/usr/local/bin/python3 on python.org's images)."""
    return _which("python3")


def _which(name: str) -> str:
    for folder in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    raise OSError(f"the clean image has no {name}")


class Changed:
    """What the agent made or changed, as the host listed it (the grading folder's listing:
    one sandbox path a line, after header lines that are no path) and as the files say: one
    anything changed since the listing was begun on the host (its header's `since`) or laid
    out in this verifier, whichever came first (its status-change time: a program of the
    agent's wrote it, and no process without the clock's capability can set that time
    back); every file, where the listing says it is not the whole of it."""

    def __init__(self, listing: str) -> None:
        self.paths = set()  # type: set[str]
        self.since = time.time()
        self.everything = False
        if not os.path.isfile(listing):
            return
        self.since = os.stat(listing).st_ctime
        with open(listing, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                line = line.rstrip("\n")
                if line.startswith("/"):
                    self.paths.add(line)
                elif line == LISTED_ALL:
                    self.everything = True
                elif line.startswith(LISTED_SINCE):
                    try:
                        self.since = min(self.since, float(line[len(LISTED_SINCE) :]))
                    except ValueError:
                        self.everything = True  # not what the host writes: closed
                elif line.strip():
                    self.everything = True

    def is_agents(self, path: str, ctime: float) -> bool:
        """Whether the file at sandbox path `path`, whose status changed at `ctime`, is the
        agent's (outside termgym's folders and the task's tests)."""
        if path.startswith((NEST_ROOT + "/", "/tests/")):
            return False
        return self.everything or os.path.normpath(path) in self.paths or ctime >= self.since


def changed_files(listing: str) -> Callable[[Any], bool]:
    """Whether a path (in this process's view) is a file of the agent's (`Changed`), or the
    file it is through the agent's links (a folder of the image's site-packages that is a
    link to a folder the agent made)."""
    changed = Changed(listing)

    def agents(path: Any) -> bool:
        if not isinstance(path, str) or not path.startswith("/"):
            return False
        return any(_one(p) for p in {path, os.path.realpath(path)})

    def _one(path: str) -> bool:
        if path.startswith((NEST_ROOT + "/", "/tests/")):
            return False
        try:
            ctime = os.stat(path).st_ctime
        except OSError:
            ctime = 0.0
        return changed.is_agents(path, ctime)

    return agents


def changed_listed() -> Callable[[Any], bool]:
    """`changed_files` of the grading folder's listing (what prepare_python watches)."""
    return changed_files(os.path.join(JOB, CHANGED))


def prepare_python(refuse: Any = None) -> None:
    """In the tests' interpreter (toolchain python in the nest): sys.path, the pinned
    modules, and the record of the agent's code loaded (module docstring; `refuse`: see
    termgym_agentcode.watch_agent_code)."""
    toolchain = [p for p in sys.path if p.startswith(TOOLCHAIN + "/")]
    if sys.flags.no_site:  # started without site (Toolchain.python_argv): its folders here
        import site

        toolchain += [p for p in site.getsitepackages()
                      if p.startswith(TOOLCHAIN + "/") and os.path.isdir(p)]  # fmt: skip
    stdlib = [p for p in toolchain if "-packages" not in p]
    sites = [p for p in dict.fromkeys(p for p in toolchain if "-packages" in p)]
    theirs = [p[len(TOOLCHAIN) :] for p in sites]  # the same folders in the snapshot
    others = [p for p in sys.path if p not in toolchain]
    sys.path[:] = stdlib + [p for p in theirs if os.path.isdir(p)] + sites + others

    class Pinned:
        """PINNED modules from the toolchain's site-packages and termgym's folder only."""

        @classmethod
        def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
            if name.partition(".")[0] not in PINNED or path is not None:
                return None
            import importlib.machinery

            return importlib.machinery.PathFinder.find_spec(name, [JOB] + sites, target)

    sys.meta_path.insert(0, Pinned)
    results = os.environ.get("TERMGYM_RESULT_DIR", RESULTS)
    # caches nothing (the environment the agent's programs inherit lets them cache, as on
    # the agent's machine): a file this process wrote is not taken for the agent's
    sys.dont_write_bytecode = True
    import termgym_agentcode

    record = os.path.join(results, AGENT_CODE)  # type: str | int
    piped = os.environ.pop(AGENT_CODE_FD, "")
    if piped.isdigit():  # the runner's pipe: what is written there stays written
        record = int(piped)
        os.set_inheritable(record, False)
    termgym_agentcode.watch_agent_code(changed_listed(), record, refuse)
    # What the tests run as `sys.executable` is the snapshot's python, as on the agent's
    # machine (the toolchain's is neither visible to the agent's programs nor theirs).
    for name in ("python3", "python"):
        for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
            if os.path.isfile(os.path.join(folder, name)):
                sys.executable = os.path.join(folder, name)
                return


def tests_nest(
    snapshot: str, graders: str, results: str, scratch: str, caps: list[int],
    masks: list[str] = [],  # noqa: B006 - read only
) -> dict:  # fmt: skip
    """The spec (termgym_nest) of the nest a job's tests run in, on the snapshot; `masks`:
    the toolchain's folders bound over the snapshot's (`Toolchain.masks`)."""
    return {
        "root": snapshot,
        "binds": [
            ["/", TOOLCHAIN, True],
            [graders, JOB, True],
            [results, RESULTS, False],
            [scratch, SCRATCH, False],
            # the verifier's own view of the network it is on (a live-state verifier's is the
            # agent's): the snapshot's files hold its image's, not what its engine gave it
            *([f, f, True] for f in NETWORK_FILES if os.path.isfile(f)),
            *([m, m, True] for m in masks),
        ],
        "fresh": [NEST_ROOT],
        "hidden": [TOOLCHAIN + "/var/lib/termgym-verifier", TOOLCHAIN + snapshot],
        "writable": [],
        "read_only": False,
        "unlink": ["/etc/ld.so.preload"],
        "files": {"/etc/nsswitch.conf": NSSWITCH},
        "uid": 0,
        "root_map": True,
        "keep_caps": caps,
        "filter": None,
    }


def programs_nest(hidden: list[str], caps: list[int]) -> dict:
    """The spec of the nests the agent's programs run in, inside the tests' nest: root (as
    on the agent's machine) with Docker's default capabilities, the strict filter, and
    termgym's folders (and `hidden`) covered."""
    return {
        "writable": [],
        "read_only": False,
        "hidden": [NEST_ROOT] + list(hidden),
        "uid": 0,
        "root_map": True,
        "keep_caps": caps,
        "filter": JOB + "/termgym_seccomp.bpf",
    }


DOCKER_DEFAULT_CAPS = (0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 27, 29, 31)
"""Docker's default capabilities by number: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL,
SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, NET_RAW, SYS_CHROOT, MKNOD, AUDIT_WRITE, SETFCAP."""
