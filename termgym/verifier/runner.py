"""Runs inside the clean verifier: every grader job over every rule set in one process.

Injected (stdlib only, Python 3.7+) into a fresh 0700 folder beside the grader files and
started with one exec, from that folder, by the verifier's own interpreter:
    /usr/bin/python3 -I -B termgym_run.py manifest.json
It reads and deletes the manifest, runs the jobs as root (`termgym_jobs`; programs the
graders start run as the agent's user: `termgym_agentexec`), and prints one line:
"TERMGYM-REPORT ", the base64 of the zlib-compressed JSON report of every run, a space and
the report's HMAC-SHA256 under the key in TERMGYM_REPORT_KEY (which it removes from its
environment first, so no job ever sees it). The host believes no other line.

As a verifier's standby (termgym.grading._standby) the same source is compiled from stdin
by a bootstrap, with __name__ "termgym_standby", before the verifier holds any file of the
agent's. It reads its preparation from stdin next (its length, a newline, the JSON), which
may name a grading folder to unpack and jobs to load early (`termgym_prepare`); it imports
what grading needs, prints STANDBY_READY, and waits for one line on stdin, the JSON
{"manifest": path relative to its cwd, "key": the report key}, then does as above. Forked
from a zygote (TERMGYM_ZYGOTE in its environment: `termgym.sandbox._zygote`), it prepares
once, prints STANDBY_READY, and each verifier's child unpacks the grading folder again, in
its own verifier's root (the host's bundle leaves those files out), prints it again and
waits so.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import sys
import zlib
from collections.abc import Callable
from typing import Any

ERROR_TAIL = 4000
"""How much of its traceback a runner that failed says."""
REPORT_PREFIX = "TERMGYM-REPORT "
RUNNER_ERROR = "TERMGYM-RUNNER-ERROR "
STANDBY_READY = "TERMGYM-STANDBY-READY"


def sign(key: bytes, payload: str) -> str:
    """The report line for `payload` (text) under `key` (bytes)."""
    mac = hmac.new(key, payload.encode("ascii"), hashlib.sha256).hexdigest()
    return REPORT_PREFIX + payload + " " + mac


PROC_GID = int(os.environ.get("TERMGYM_PROC_GID", "60100"))
"""termgym's group in a verifier (termgym/isolation/_procview.py): its /proc shows every
process to this group's members, and each other process only to its own user. The runner
takes it, so the graders see (and stop) the agent's programs; each program of the agent's
drops every group (its nest's entry, `termgym_agentexec`), so it lists only its own."""


def _proc_group() -> None:
    with contextlib.suppress(OSError):  # no CAP_SETGID (grading in place): nothing hidden
        os.setgroups([PROC_GID])


def main(manifest: dict[str, Any], graders: str) -> dict[str, Any]:
    """Run every job of the manifest (its grading folder: `graders`); the report, unsigned."""
    _proc_group()
    sys.path[:0] = [os.path.join(graders, "graders"), graders]
    import termgym_agentexec
    import termgym_jobs

    termgym_agentexec.install()
    nest, why = _nest_spec(manifest, graders)
    termgym_agentexec.configure_nest(nest)
    ctx = {
        "workdir": manifest["workdir"],
        "graders": graders,
        "agentexec": termgym_agentexec,
        "as_agent": sys.executable + " -I -B " + os.path.join(graders, "termgym_agentexec.py"),
        "record_inputs": bool(manifest.get("record_inputs")),
        "proc_gid": PROC_GID,
        "prepared": [],
        "inline": [],
        # one job of one run: a prepared one runs in this process (termgym_prepare.run_here)
        "alone": len(manifest["jobs"]) == 1
        and (bool(manifest["jobs"][0].get("batch")) or len(manifest["jobs"][0]["rulesets"]) == 1),
    }
    if manifest.get("snapshot"):
        import termgym_snapshot

        ctx["snapshot"] = manifest["snapshot"]
        ctx["snapshot_toolchain"] = termgym_snapshot.Toolchain(termgym_snapshot.tests_python())
        ctx["work"] = list(manifest.get("work") or [manifest["workdir"]])
    # A workdir the agent deleted is its own failure, judged by the graders: run from "/".
    ctx["cwd"] = ctx["workdir"] if os.path.isdir(ctx["workdir"]) else "/"
    os.chdir(ctx["cwd"])
    jobs = [
        {"id": job["id"], "runs": termgym_jobs.run_job(job, manifest["rulesets"], ctx)}
        for job in manifest["jobs"]
    ]
    facts = {
        "dumpable": _DUMPABLE[0], "nest": why, "prepared": ctx["prepared"],
        "inline": ctx["inline"],
    }  # fmt: skip
    zygote = sys.modules.get("termgym_zygote")
    facts["forked"] = zygote is not None
    if zygote is not None:  # what every grading compiles again, which its zygote could load
        facts["imported"] = sorted(set(sys.modules) - zygote.LOADED)
    return {"jobs": jobs, "runner": facts}


GRADE_ROOT = "/var/lib/termgym-verifier"
"""Every grading folder's parent: covered in the nests (termgym.grading._bundle.GRADE_ROOT)."""


def _nest_spec(manifest: dict[str, Any], graders: str) -> tuple[dict[str, Any] | None, str]:
    """The spec of the nests the agent's programs run in (termgym_nest), and "" - or, when
    no nest can be made in this verifier, None and why not (its programs then run by an id
    switch alone, and the host marks the verdict)."""
    spec = {
        "writable": list(manifest.get("work") or [manifest["workdir"]]) + ["/tmp", "/var/tmp"],
        "hidden": [GRADE_ROOT],
        "uid": int(os.environ.get("TERMGYM_AGENT_UID", "60000")),
        "filter": os.path.join(graders, "termgym_seccomp.bpf"),
    }
    if manifest.get("in_place"):
        return None, "grading in place"
    try:
        import termgym_nest
    except ImportError as exc:  # no ctypes in the image
        return None, "the image's Python cannot make namespaces: " + str(exc)
    if "termgym_zygote" in sys.modules:  # forked from a zygote, which made this verifier's
        return spec, ""  # user, mount and pid namespaces itself: a nest needs no more
    why = termgym_nest.probe(spec)
    return (None, why) if why else (spec, "")


_DUMPABLE = [True]


def _not_dumpable() -> None:
    """Make this process non-dumpable: no process without CAP_SYS_PTRACE (which no verifier
    process has), root's included, may then read its memory, environment or descriptors
    through /proc, nor trace it. A root process that loaded the agent's code could otherwise
    read the report key out of this one."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(4, 0, 0, 0, 0) == 0:  # PR_SET_DUMPABLE, SUID_DUMP_DISABLE
            _DUMPABLE[0] = False
    except (ImportError, OSError, AttributeError):
        pass  # reported: the host marks the grading (docs/security.md)


def _take_channel() -> int:
    """Keep the host's pipe (fd 1) for the report alone, on a descriptor no program started
    from here inherits (close-on-exec); fds 1 and 2 become /dev/null, so whatever a grader or
    a program it starts prints reaches nobody. Only this process holds the channel, and
    /proc/PID/fd of a non-dumpable process opens for nobody else."""
    channel = os.dup(1)  # not inheritable (PEP 446)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)
    return channel


def _send(channel: int, line: str) -> None:
    data = ("\n" + line + "\n").encode("ascii", "replace")
    while data:
        data = data[os.write(channel, data) :]


def grade(manifest_path: str, key: bytes) -> None:
    """Run the grading and write exactly one line on the channel: the signed report, or (if
    the runner itself failed) an error the host reads as a grading error.

    A manifest marked "in_place" (`termgym.grading.grade_rulesets`, for tests and benchmarks:
    the sandbox's own programs grade its own state) keeps the old, open runner: dumpable,
    reporting on the stdout it shares with everything it starts."""
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    os.remove(manifest_path)  # the rule sets live in this process only from here on
    if manifest.get("in_place"):
        _DUMPABLE[0] = True
        channel = 1
    else:
        _not_dumpable()
        channel = _take_channel()
        prepare = sys.modules.get("termgym_prepare")
        if prepare is not None:  # its forks close the channel first
            prepare.take_channel(channel)
    try:
        report = main(manifest, os.path.dirname(os.path.abspath(manifest_path)))
        packed = base64.b64encode(zlib.compress(json.dumps(report).encode("utf-8")))
        _send(channel, sign(key, packed.decode("ascii")))
    except BaseException:  # noqa: B036 - a runner that fails says why, never prints twice
        import traceback

        _send(channel, RUNNER_ERROR + json.dumps(traceback.format_exc()[-ERROR_TAIL:]))


WARM = (
    "collections.abc", "pickle", "re", "runpy", "shlex", "signal", "stat", "subprocess",
    "tempfile", "time", "typing",
)  # fmt: skip
"""Imported by a standby before it waits: the stdlib the grading support modules use."""
ZYGOTE_REFUSED = "TERMGYM-ZYGOTE-REFUSED "
"""What a zygote prints instead of STANDBY_READY when its forks would share something."""


def standby() -> None:
    """Prepare (the module docstring), then wait for the go line and grade; or, forked from
    a zygote, serve a fork per verifier that does so."""
    os.environ.pop("TERMGYM_REPORT_KEY", None)
    stdin = sys.stdin.buffer
    preparation = json.loads(_blob(stdin) or b"{}")
    control = os.environ.get("TERMGYM_ZYGOTE", "")
    runtime = [_blob(stdin), _blob(stdin)] if control else []  # termgym_kernel, termgym_zygote
    for name in WARM:
        __import__(name)
    folder = preparation.get("folder")
    files = _decoded(preparation.get("files") or {})  # once: every fork of a zygote writes them

    def child() -> None:
        """A zygote's fork, in its verifier's own root: the folder, as this process
        unpacked it in the zygote's, before the work exists (the host leaves it out)."""
        if folder:
            _unpack(folder, files)
        _wait_and_grade()

    serve = (lambda: _serve(runtime, int(control), child)) if control else _wait_and_grade
    if not folder:
        serve()
        return
    _unpack(folder, files)
    sys.path.insert(0, folder)
    import termgym_prepare

    quiet = _quiet()  # what preparing prints (or keeps a descriptor of) reaches nobody

    def then() -> None:
        _speak(quiet)
        serve()

    termgym_prepare.prepare(preparation, folder, then)


def _quiet() -> int:
    """Point fds 1 and 2 at /dev/null; the descriptor of the old fd 1, to `_speak` again."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1)  # not inheritable
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)
    return saved


def _speak(saved: int) -> None:
    """Fds 1 and 2 back to what `_quiet` kept."""
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in (1, 2):
        os.dup2(saved, fd)
    os.close(saved)


def _blob(stream: Any) -> bytes:
    """One length-prefixed blob of `stream`: its length in digits, a newline, the bytes."""
    line = stream.readline()
    return stream.read(int(line)) if line.strip() else b""


def _decoded(files: dict[str, Any]) -> dict[str, tuple[bytes | None, int]]:
    """The preparation's {relative path: [base64 content, or None for a folder; mode]}, its
    contents decoded."""
    return {
        rel: (None if content is None else base64.b64decode(content), mode)
        for rel, (content, mode) in files.items()
    }


def _unpack(folder: str, files: dict[str, tuple[bytes | None, int]]) -> None:
    """The grading folder at `folder` (root's, 0700, as the host's bundle makes it), from
    {relative path: (content, or None for a folder; mode)} (`_decoded`); the task's files,
    no manifest, no rule."""
    os.makedirs(GRADE_ROOT, 0o711, exist_ok=True)
    os.chmod(GRADE_ROOT, 0o711)
    os.makedirs(folder, 0o700, exist_ok=True)
    for rel, (content, mode) in sorted(files.items()):
        path = os.path.join(folder, rel)
        if content is None:
            os.makedirs(path, mode, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as handle:
            handle.write(content)


def _serve(runtime: list[bytes], control: int, child: Callable[[], None]) -> None:
    """As a zygote: say it is ready (or why its forks would not be single-use), speak no
    more, and fork a standby per verifier (termgym_zygote), which runs `child`. `runtime`:
    the sources of termgym_kernel (unless preparing imported it already, from the grading
    folder: the same file) and termgym_zygote, as the host sent them."""
    prepare = sys.modules.get("termgym_prepare")
    why = prepare.check_forkable(control) if prepare is not None else ""
    if why:
        sys.stdout.write(ZYGOTE_REFUSED + why + "\n")
        sys.stdout.flush()
        os._exit(1)
    sys.stdout.write(STANDBY_READY + "\n")
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    kernel, source = runtime
    if "termgym_kernel" not in sys.modules:
        _load("termgym_kernel", kernel)
    _load("termgym_zygote", source).serve(child)


def _load(name: str, source: bytes) -> Any:
    """The module `name` from `source`, the host's, registered in sys.modules."""
    module = type(sys)(name)
    exec(compile(source, name + ".py", "exec"), module.__dict__)  # noqa: S102
    sys.modules[name] = module
    return module


def _wait_and_grade() -> None:
    """Say it waits, read the go line, grade (what each standby does, once)."""
    sys.stdout.write(STANDBY_READY + "\n")
    sys.stdout.flush()
    with open(0, "rb", closefd=False) as stdin:  # a reader of its own: the zygote's was copied
        line = stdin.readline()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # nothing started from here on reads the host's pipe
    os.close(null)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the process's stdin from here on
    try:
        go = json.loads(line)
        manifest, key = go["manifest"], go["key"]
    except (ValueError, KeyError, TypeError):
        sys.stdout.write(f"the standby runner expected a go line, got {line[:200]!r}\n")
        sys.stdout.flush()
        os._exit(2)
    grade(manifest, key.encode("ascii"))
    _exit()


def _exit() -> None:
    """Leave at once (the report is out): no interpreter teardown for the host to wait on."""
    os._exit(0)


if __name__ == "__main__":
    os.umask(0o022)
    _key = os.environ.pop("TERMGYM_REPORT_KEY", "").encode("ascii")
    grade(sys.argv[1], _key)
    _exit()
elif __name__ == "termgym_standby":
    os.umask(0o022)
    standby()
    _exit()
