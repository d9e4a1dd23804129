"""Runs inside the clean verifier: how the runner runs one grader job, for its rule sets.

Injected beside the runner as the module `termgym_jobs` (stdlib only, Python 3.7+), and
imported by it (`termgym_run`) once the grading folder is on its path; a standby loads it
before any work exists (`termgym_prepare`). A job is a program (`run_exec`: a command the
grader kind gives, run as root from the grading folder, in a session of its own, its
output to a log only this process reads; on a snapshot, in the tests' nest) or a call
(`run_call`: a function of the task's graders, called in this process under a timer).
Either way what comes back is its exit, its output's tail and its result files, never
trusted further than the report the runner signs. The programs a job starts as the
agent's user are `termgym_agentexec`'s (the runner hands it in `ctx`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from typing import Any

OUTPUT_TAIL = 4000
FILE_LIMIT = 256000
INPUTS_RECORD = ".termgym-inputs.jsonl"
AGENT_CODE = ".termgym-agent-code"
"""In a snapshot run's files: the agent's code its tests loaded (termgym_snapshot), as the
runner heard it on its own pipe (`_Record`), never a file of the tests'."""
INPUTS_LIMIT = 4 << 20
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

_LAUNCH = """\
import json, os, runpy, sys
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # non-dumpable, as the runner (it holds rules)
except Exception:
    pass
spec = json.loads(sys.stdin.read())
sys.stdin.close()
sys.stdin = open(os.devnull)
sys.path[:0] = spec["path"]
if sys.flags.no_site:  # snapshot grading's toolchain (termgym_snapshot): its site-packages
    import site
    sys.path += [p for p in site.getsitepackages() if os.path.isdir(p) and p not in sys.path]
sys.argv = spec["argv"]
if spec["module"]:
    runpy.run_module(spec["module"], run_name="__main__", alter_sys=True)
else:
    runpy.run_path(spec["argv"][0], run_name="__main__")
"""
"""Python jobs start through this, their arguments on stdin: no grader path is ever on a
command line, which every user can read in /proc."""


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fill(value: Any, rules: dict[str, Any]) -> Any:
    """Fill "{{ rule }}" placeholders of call kwargs (recursively) with rule values."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value.strip())
        if whole and whole.group(1) in rules:
            return rules[whole.group(1)]
        return _PLACEHOLDER.sub(
            lambda m: _fmt(rules[m.group(1)]) if m.group(1) in rules else m.group(0), value
        )
    if isinstance(value, list):
        return [fill(v, rules) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, rules) for k, v in value.items()}
    return value


def normalize(value: Any) -> dict[str, Any]:
    """A call's return value as {"score", "passed"?, "message"}."""
    if isinstance(value, bool):
        return {"score": 1.0 if value else 0.0, "passed": value, "message": ""}
    if isinstance(value, (int, float)):
        return {"score": float(value), "message": ""}
    if isinstance(value, tuple) and len(value) == 2:
        out = normalize(value[0])
        out["message"] = str(value[1])
        return out
    if isinstance(value, dict) and "score" in value:
        out = {"score": float(value["score"]), "message": str(value.get("message", ""))}
        if "passed" in value:
            out["passed"] = bool(value["passed"])
        return out
    raise TypeError(f"expected bool, number, (score, message) or {{'score': ...}}, got {value!r}")


def _read_results(folder: str) -> dict[str, str]:
    files = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as handle:
                data = handle.read(INPUTS_LIMIT if name == INPUTS_RECORD else FILE_LIMIT)
            files[os.path.relpath(path, folder)] = data.decode("utf-8", "replace")
    return files


def _tail(path: str) -> str:
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - OUTPUT_TAIL))
        return handle.read().decode("utf-8", "replace")


def _python_launch(argv: list[str]) -> tuple[list[str], dict[str, Any] | None]:
    """(argv, stdin spec) to start a `python3 ...` job through _LAUNCH, else (argv, None)."""
    if not argv or os.path.basename(argv[0]) not in ("python", "python3"):
        return argv, None
    rest = list(argv[1:])
    if not rest or rest[0].startswith("-") and rest[0] != "-m":
        return argv, None
    if rest[0] == "-m":
        if len(rest) < 2:
            return argv, None
        module, args = rest[1], [rest[1]] + rest[2:]
    else:
        module, args = None, rest
    return [sys.executable, "-I", "-B", "-c", _LAUNCH], {"module": module, "argv": args}


def _prepared(job: dict[str, Any], ctx: dict[str, Any]) -> tuple[Any, str, str]:
    """The job's prepared program, result folder and scratch folder (termgym_prepare), or
    (None, a fresh result folder, a fresh scratch folder)."""
    prepare = sys.modules.get("termgym_prepare")
    entry = None
    if prepare is not None and not ctx.get("snapshot"):
        entry = prepare.prepared(job, job["argv"], job.get("env") or {})
    if entry is not None:
        try:
            os.mkdir(entry["job"]["results"], 0o700)
            os.mkdir(entry["job"]["scratch"], 0o711)
            os.chmod(entry["job"]["scratch"], 0o711)
            return entry, entry["job"]["results"], entry["job"]["scratch"]
        except OSError:  # the work holds something there: the job runs as usual
            entry = None
    results = tempfile.mkdtemp(prefix="results-", dir=ctx["graders"])
    scratch = tempfile.mkdtemp(prefix=".termgym-io-", dir="/tmp")
    os.chmod(scratch, 0o711)  # the agent's user passes through to what is shared with it
    return None, results, scratch


def run_exec(
    job: dict[str, Any], names: list[str], rulesets: dict[str, Any], ctx: dict[str, Any]
) -> dict[str, Any]:
    entry, results, scratch = _prepared(job, ctx)
    env = dict(os.environ)
    rules = rulesets[names[0]]
    rules_file = os.path.join(results, ".rules.json")
    with open(rules_file, "w") as handle:
        json.dump(rules, handle)
    env.update(
        {
            "TERMGYM_RULES": json.dumps(rules),
            "TERMGYM_RULES_FILE": rules_file,
            "TERMGYM_RESULT_DIR": results,
            "TERMGYM_SCORE_FILE": os.path.join(results, "score"),
            "TERMGYM_WORKDIR": ctx["workdir"],
            "TERMGYM_GRADER_DIR": ctx["graders"],
            "TERMGYM_AS_AGENT": ctx["as_agent"],
        }
    )
    if ctx["record_inputs"]:  # fingerprints of what the agent's programs get (termgym check)
        env["TERMGYM_RECORD_INPUTS"] = "1"
    spec = ctx["agentexec"].nest_spec()
    env[ctx["agentexec"].NEST_ENV] = json.dumps(spec) if spec else ""
    if job.get("batch"):
        sets_file = os.path.join(results, ".rulesets.json")
        with open(sets_file, "w") as handle:
            json.dump({n: rulesets[n] for n in names}, handle)
        env["TERMGYM_RULESETS_FILE"] = sets_file

    def sub(text: str) -> str:
        for name, value in (
            ("graders", ctx["graders"]),
            ("results", results),
            ("scratch", scratch),
        ):
            text = text.replace("{" + name + "}", value)
        return text

    env.update({k: sub(v) for k, v in job.get("env", {}).items()})
    argv, spec = _python_launch([sub(a) for a in job["argv"]])
    if spec is not None:
        spec["path"] = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep) if p]
    cwd, nest, preexec, record, watch = ctx["cwd"], None, None, None, None
    if ctx.get("snapshot"):  # the job runs in a nest on the snapshot, from the toolchain
        argv, env, spec, nest = _on_snapshot(argv, env, spec, ctx, results, scratch)
        cwd = ctx["workdir"] if os.path.isdir(ctx["snapshot"] + ctx["workdir"]) else "/"
        watch = _watch(ctx, nest)  # what the tests' processes run, map and open
        enter = nest.entry(cwd, 0, [ctx["proc_gid"]])  # the tests see (and stop) every process
        arm = watch.preexec()

        def preexec() -> None:
            enter()  # returns in the tests' process only (its proxy stays in the verifier)
            arm()

        record = _Record()  # what of the agent's its tests load, told to this process
        env[record.VARIABLE] = str(record.write)
    log_path = os.path.join(results, ".log")
    start = time.monotonic()
    out: dict[str, Any] = {"rulesets": names, "exit_code": None, "timed_out": False, "error": None}
    with open(log_path, "wb") as log:
        if entry is not None:  # loaded before the work existed: run here, or in a fork
            ctx["prepared"].append(job["id"])
            env.pop("PYTHONPATH", None)
            prepare = sys.modules["termgym_prepare"]
            run = prepare.run_in_fork
            if ctx["alone"]:  # the only job: this process has nothing left but its report
                ctx["inline"].append(job["id"])
                run = prepare.run_here
            out["exit_code"], out["timed_out"] = run(
                entry, env, ctx["cwd"], log.fileno(), job["timeout"]
            )
        else:
            _popen_job(out, argv, env, ctx["cwd"], spec, preexec, log, job["timeout"], record)
    ctx["agentexec"].stop_agent_processes()
    if nest is not None:
        nest.close()
    watched = watch.finish() if watch is not None else None
    out["duration"] = time.monotonic() - start
    out["output"] = _tail(log_path)
    for private in (log_path, rules_file, env.get("TERMGYM_RULESETS_FILE")):
        if private:
            with contextlib.suppress(OSError):
                os.remove(private)
    out["files"] = _read_results(results)
    if record is not None:  # the runner's record, whatever the tests' process left as files
        out["files"][AGENT_CODE] = record.read()
    if watched is not None:  # the kernel's (termgym_watch), from outside the tests' nest
        import termgym_watch

        out["files"][termgym_watch.FINDINGS] = watched
    return out


def _watch(ctx: dict[str, Any], nest: Any) -> Any:
    """The kernel's watch of a job's tests on the snapshot (termgym_watch), its supervisor
    started: the tests' pid namespace is the nest's, the agent's files those the host
    listed (or changed since), the work the task's declared paths."""
    import termgym_snapshot as snap
    import termgym_watch

    with open(os.path.join(ctx["graders"], termgym_watch.FILTER), "rb") as handle:
        program = handle.read()
    changed = snap.Changed(os.path.join(ctx["graders"], snap.CHANGED))
    layout = termgym_watch.Layout(
        os.fstat(nest.fds["pid"]).st_ino, changed.is_agents, ctx["work"], ctx["snapshot"]
    )
    return termgym_watch.Watch(program, layout)


class _Record:
    """A pipe the tests' process writes the record of the agent's code to (their process
    runs that code once loaded, as root: it could rewrite a file of theirs, never what it
    already wrote here), read on a thread of the runner's so a long record never holds the
    tests."""

    VARIABLE = "TERMGYM_AGENT_CODE_FD"

    def __init__(self) -> None:
        self.reading, self.write = os.pipe()  # handed to the tests by pass_fds alone
        self.chunks = []  # type: list[bytes]
        self.thread = None  # type: Any

    def start(self) -> None:
        """Read on a thread from now on: once the tests' process started (no thread of this
        one's stands beside the fork that starts it)."""
        import threading

        def drain() -> None:
            with open(self.reading, "rb", buffering=0) as source:
                chunk = source.read(65536)
                while chunk:
                    self.chunks.append(chunk)
                    chunk = source.read(65536)

        self.thread = threading.Thread(target=drain, daemon=True)
        self.thread.start()

    def read(self) -> str:
        """What the tests wrote, once their process ended (and the runner's end is let go:
        a process of theirs that still holds the pipe gets a second, then what came)."""
        with contextlib.suppress(OSError):
            os.close(self.write)
        if self.thread is None:  # the tests never started: nothing to read
            os.close(self.reading)
            return ""
        self.thread.join(timeout=1.0)
        return b"".join(self.chunks).decode("utf-8", "replace")


def _popen_job(
    out: dict[str, Any],
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    spec: dict[str, Any] | None,
    preexec: Any,
    log: Any,
    timeout: float,
    record: _Record | None = None,
) -> None:
    """Run the job's program (its `spec` on stdin, for a python job) into `out`, with
    `record`'s pipe handed down (read from its start on)."""
    try:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
            stdin=subprocess.PIPE if spec is not None else subprocess.DEVNULL,
            user=os.geteuid(),  # the grader itself: root, not the agent's user
            preexec_fn=preexec,
            pass_fds=(record.write,) if record is not None else (),
        )
    except OSError as exc:
        out["error"] = f"could not start {argv[0]}: {exc}"
        return
    if record is not None:
        record.start()
    if spec is not None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.write(json.dumps(spec).encode())
            proc.stdin.close()
    try:
        out["exit_code"] = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        out["timed_out"] = True
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _on_snapshot(
    argv: list[str],
    env: dict[str, str],
    spec: dict[str, Any] | None,
    ctx: dict[str, Any],
    results: str,
    scratch: str,
) -> tuple[list[str], dict[str, str], dict[str, Any] | None, Any]:
    """A job's command, environment and launch spec as the tests' nest on the snapshot runs
    them (termgym_snapshot), and that nest."""
    import termgym_nest
    import termgym_snapshot as snap

    places = ((results, snap.RESULTS), (ctx["graders"], snap.JOB), (scratch, snap.SCRATCH))

    def moved(text: str) -> str:
        for here, there in places:
            text = text.replace(here, there)
        return text

    toolchain = ctx["snapshot_toolchain"]
    program = os.path.basename(argv[0])
    if argv[0] == sys.executable or program.startswith("python"):
        start = toolchain.python_argv()
    elif program in ("bash", "sh"):
        start = toolchain.argv("/bin/bash")
    else:
        raise RuntimeError(
            f"snapshot grading starts graders from the clean image's bash or python3, not "
            f"{argv[0]!r} (the snapshot's programs are the agent's)"
        )
    env = {k: moved(v) for k, v in env.items()}
    python = " ".join(toolchain.python_argv())
    env["TERMGYM_AS_AGENT"] = f"{python} -I -B {snap.JOB}/termgym_agentexec.py"
    env["TERMGYM_TOOLCHAIN"] = json.dumps(toolchain.to_json())
    # the C library and OpenSSL read the toolchain's files; the agent's programs get the
    # image's values back (termgym_agentexec.agent_env)
    runtime = toolchain.environment()
    env[snap.IMAGE_ENV] = json.dumps({k: env.get(k) for k in runtime})
    env.update(runtime)
    env[ctx["agentexec"].NEST_ENV] = json.dumps(
        snap.programs_nest([], list(snap.DOCKER_DEFAULT_CAPS))
    )
    if spec is not None:
        spec = {**spec, "argv": [moved(a) for a in spec["argv"]], "path": [snap.JOB]}
    nest = termgym_nest.Nest(
        snap.tests_nest(
            ctx["snapshot"], ctx["graders"], results, scratch, list(snap.DOCKER_DEFAULT_CAPS),
            toolchain.masks(),
        )
    )  # fmt: skip
    return start + [moved(a) for a in argv[1:]], env, spec, nest


class _Timeout(BaseException):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout()


def _parameters(func: Any) -> tuple[tuple[str, ...], bool]:
    """The keyword names `func` takes, and whether it takes **kwargs (a plain function is read
    off its code: importing inspect costs a short grading more than the grading itself)."""
    code = getattr(func, "__code__", None)
    if code is not None and getattr(func, "__wrapped__", None) is None:
        count = code.co_argcount + code.co_kwonlyargcount
        first = getattr(code, "co_posonlyargcount", 0)
        return tuple(code.co_varnames[first:count]), bool(code.co_flags & 8)
    import inspect

    params = inspect.signature(func).parameters
    named = tuple(
        n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )
    return named, any(p.kind == p.VAR_KEYWORD for p in params.values())


def _traceback(limit: int | None = None) -> str:
    import traceback

    return traceback.format_exc(limit=limit)


def run_call(
    job: dict[str, Any], name: str, rules: dict[str, Any], ctx: dict[str, Any]
) -> dict[str, Any]:
    module_name, _, attr = job["call"].partition(":")
    out: dict[str, Any] = {
        "rulesets": [name],
        "exit_code": None,
        "timed_out": False,
        "error": None,
        "output": "",
        "files": {},
        "value": None,
    }
    start = time.monotonic()
    agentexec = ctx["agentexec"]
    results = ""
    if ctx["record_inputs"]:
        results = tempfile.mkdtemp(prefix="results-", dir=ctx["graders"])
        agentexec.record_into(os.path.join(results, INPUTS_RECORD))
        agentexec.context(job["id"], name)
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, job["timeout"])
    try:
        module = __import__(module_name, fromlist=["_"])
        func = getattr(module, attr)
        kwargs = fill(dict(job.get("kwargs", {})), rules)
        params, takes_all = _parameters(func)
        if "rules" in params or takes_all:
            kwargs["rules"] = dict(rules)
        if "workdir" in params or takes_all:
            kwargs["workdir"] = ctx["workdir"]
        out["value"] = normalize(func(**kwargs))
    except _Timeout:
        out["timed_out"] = True
    except AssertionError as exc:  # a failed assertion is a verdict, as in pytest
        message = str(exc) or _traceback(limit=-1).strip().splitlines()[-2].strip()
        out["value"] = {"score": 0.0, "passed": False, "message": "assert: " + message}
    except BaseException:  # noqa: B036 - a grader may call sys.exit; report, never die
        out["error"] = _traceback()[-OUTPUT_TAIL:]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.chdir(ctx["cwd"])
        agentexec.stop_agent_processes()
        if results:
            agentexec.record_into(None)
    out["duration"] = time.monotonic() - start
    if results:
        out["files"] = _read_results(results)
    return out


def run_job(
    job: dict[str, Any], rulesets: dict[str, Any], ctx: dict[str, Any]
) -> list[dict[str, Any]]:
    """The runs of one job of the manifest: a call once per rule set, a batch program once
    for all of them, any other program once per rule set."""
    names = job["rulesets"]
    if job.get("call"):
        return [run_call(job, n, rulesets[n], ctx) for n in names]
    if job.get("batch"):
        return [run_exec(job, names, rulesets, ctx)]
    return [run_exec(job, [n], rulesets, ctx) for n in names]
