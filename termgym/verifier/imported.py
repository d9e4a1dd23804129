"""Runs inside the clean verifier for an imported Terminal-Bench or Harbor task, as root.

Injected as `termgym_imported.py` (stdlib only, Python 3.7+) and started once per rule set
with the job's config (`termgym_imported.json`) beside it:

1. Lays out the test folder as both harnesses do: the task's tests at /tests (TB also puts
   run-tests.sh there), with the overlay's occurrences rewritten to this rule set's values,
   and a fresh /logs/verifier. In `clean` protection both are root's, mode 0700: the
   agent's programs, which the tests start as the agent's user, cannot read the tests or
   write a reward.
2. Runs the test script from the workdir under bash. `clean`: every line of it was
   recognized at import (install steps moved to build time, cd/export/echo, pytest
   invocations); it runs as root and each pytest invocation runs in-process here
   (`pytest` below), with every program the tests start switched to the agent's user
   (`termgym_agentexec`). `agent-user`: the script runs programs of the agent's work itself,
   so the whole script runs as the agent's user (docs/importing.md says what that leaves
   undefended).
3. Writes the verdict for the host to `verdict.json` in the result folder:
   Terminal-Bench: the tests listed in pytest's short test summary (in `clean` mode taken
   from the reports of the pytest runs themselves, never from text a program could print);
   Harbor: /logs/verifier/reward.txt or reward.json.

`python3 termgym_imported.py pytest ARGS...` is the in-process pytest the script's pytest
invocations are rewritten to.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = "/tests"
LOGS = "/logs/verifier"
_SUMMARY = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)
_STATUSES = ("PASSED", "FAILED", "SKIPPED", "XFAIL", "XPASS", "ERROR")
_PASSING = ("PASSED", "SKIPPED", "XFAIL")


def _fmt(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _rewrite(text, spans, rules):
    out, cursor = [], 0
    for span in sorted(spans, key=lambda s: s["start"]):
        out.append(text[cursor : span["start"]])
        value = _fmt(rules[span["rule"]])
        # A derived occurrence (an expected count, say) has a text per value of its rule.
        out.append(span["texts"][value] if "texts" in span else value)
        cursor = span["end"]
    out.append(text[cursor:])
    return "".join(out)


def _fresh(path, mode, owner):
    if os.path.islink(path) or os.path.isfile(path):
        os.remove(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)
    os.chmod(path, mode)
    os.chown(path, owner, owner)


def lay_out(config, rules, agent_uid):
    """The tests at /tests (rewritten for `rules`) and an empty /logs/verifier."""
    clean = config["protection"] == "clean"
    _fresh(TESTS, 0o700 if clean else 0o755, 0)
    source = os.path.join(HERE, "graders", "tests")
    spans = {}
    for span in config.get("rewrite", []):
        spans.setdefault(span["file"], []).append(span)
    if os.path.isdir(source):
        for base, _dirs, files in os.walk(source):
            rel = os.path.relpath(base, source)
            target = os.path.normpath(os.path.join(TESTS, rel))
            os.makedirs(target, exist_ok=True)
            for name in files:
                src = os.path.join(base, name)
                key = os.path.normpath(os.path.join("tests", rel, name))
                dst = os.path.join(target, name)
                if key in spans:
                    with open(src, encoding="utf-8") as handle:
                        text = _rewrite(handle.read(), spans[key], rules)
                    with open(dst, "w", encoding="utf-8") as handle:
                        handle.write(text)
                else:
                    shutil.copyfile(src, dst)
                os.chmod(dst, 0o755)
    script = os.path.join(HERE, "graders", config["script"])
    with open(script, encoding="utf-8") as handle:
        text = _rewrite(handle.read(), spans.get(config["script"], []), rules)
    toolchain = config.get("toolchain")
    if clean and toolchain:
        # On a snapshot the script's one outside program is the clean image's too: nothing
        # of the agent's machine runs beside the tests' interpreter (docs/security.md).
        text = "mkdir() { " + " ".join(toolchain["mkdir"]) + ' "$@"; }\n' + text
    if not clean:
        # The agent's user runs the whole script, and this file is out of its reach: its
        # pytest lines run the clean image's pytest (in its environment, TERMGYM_* is gone).
        # (on a snapshot, the agent's own python3, as its harness would run it: the script
        # runs as the agent's program there, where the toolchain is not to be seen)
        python = "python3" if toolchain else sys.executable
        text = text.replace("$TERMGYM_PYTEST", f"{python} -m pytest -p no:cacheprovider")
    with open(config["script_at"], "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(config["script_at"], 0o755)
    if not clean:
        for base, _dirs, files in os.walk(TESTS):
            for name in [base] + [os.path.join(base, n) for n in files]:
                os.chmod(name, 0o755 if os.path.isdir(name) else 0o644)
    os.makedirs("/logs", exist_ok=True)
    _fresh(LOGS, 0o700 if clean else 0o755, 0 if clean else agent_uid)


def parse_summary(text):
    """Terminal-Bench's pytest parser: test name -> status, from the first "short test
    summary info" section; None when the output has none (a failure, not an error)."""
    parts = _SUMMARY.split(text, maxsplit=1)
    if len(parts) < 2:
        return None
    results = {}
    for line in parts[1].splitlines():
        line = line.strip()
        if not line or " " not in line and line not in _STATUSES:
            continue
        status, _, rest = line.partition(" ")
        if status not in _STATUSES:
            continue
        name = rest.split(" - ")[0].strip().split("::")[-1]
        if name:
            results[name] = status
    return results


def _verdict_tb(results, source):
    if results is None:
        return {
            "score": 0.0,
            "passed": False,
            "message": "no short test summary info in the "
            "test output (Terminal-Bench counts that as a failure)",
            "source": source,
        }
    if not results:
        return {
            "score": 0.0,
            "passed": False,
            "message": "the short test summary listed no test",
            "source": source,
        }
    failed = sorted(n for n, s in results.items() if s not in _PASSING)
    score = 0.0 if failed else 1.0  # Terminal-Bench resolves a task only when all pass
    message = "failed: " + ", ".join(failed) if failed else f"{len(results)} passed"
    return {
        "score": score,
        "passed": not failed,
        "message": message[:1500],
        "tests": results,
        "source": source,
    }


def _verdict_harbor(exit_code):
    for name in ("reward.txt", "reward.json"):
        raw = _read_regular(os.path.join(LOGS, name))
        if raw is None:
            continue
        try:
            if name == "reward.txt":
                value = float(raw)
            else:
                data = json.loads(raw)
                if isinstance(data, dict) and "reward" in data:
                    value = float(data["reward"])
                elif isinstance(data, dict) and len(data) == 1:
                    value = float(list(data.values())[0])
                else:
                    value = float(data)
        except (ValueError, TypeError):
            return {"error": f"{name} holds no number: {raw[:80]!r}"}
        if value != value or value < 0:
            return {"error": f"{name} holds {raw[:80]!r}: expected a reward in [0, 1]"}
        value = min(value, 1.0)
        return {
            "score": value,
            "passed": value >= 1.0,
            "source": name,
            "message": f"{name}: {_fmt(value)} (test script exit {exit_code})",
        }
    return {
        "score": 0.0,
        "passed": False,
        "source": "none",
        "message": f"the test script wrote neither reward.txt nor reward.json (exit {exit_code})",
    }


def _read_regular(path, limit=4096):
    """The start of the regular file at `path`, opened without following a link (the agent's
    user may own its folder, and swap the file for a link at any moment); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


def run_script(config, env, results_dir):
    """Run the test script; (exit code, its output)."""
    log_path = os.path.join(results_dir, ".script.log")
    argv = ["bash", config["script_at"]]
    with open(log_path, "wb") as log:
        if config["protection"] == "clean":
            if config.get("toolchain"):  # the clean image's bash, on the snapshot
                argv = config["toolchain"]["bash"] + [config["script_at"]]
            # the runner's pipe for the record of the agent's code, down to the tests' pytest
            record = env.get("TERMGYM_AGENT_CODE_FD", "")
            code = subprocess.call(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=config["cwd"],
                stdin=subprocess.DEVNULL,
                user=os.geteuid(),
                pass_fds=(int(record),) if record.isdigit() else (),
            )
        else:
            import termgym_agentexec

            termgym_agentexec.install()
            code = subprocess.call(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=termgym_agentexec.agent_env(env),
                cwd=config["cwd"],
                stdin=subprocess.DEVNULL,
            )
            termgym_agentexec.stop_agent_processes()
    with open(log_path, encoding="utf-8", errors="replace") as handle:
        output = handle.read()
    os.remove(log_path)
    return code, output


def main():
    with open(os.path.join(HERE, "termgym_imported.json")) as handle:
        config = json.load(handle)
    rules = json.loads(os.environ.get("TERMGYM_RULES", "{}"))
    results_dir = os.environ["TERMGYM_RESULT_DIR"]
    config["toolchain"] = json.loads(os.environ.get("TERMGYM_TOOLCHAIN") or "null")
    import termgym_agentexec

    lay_out(config, rules, termgym_agentexec.AGENT_UID)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TERMGYM_RULES")}
    env.update(config.get("env", {}))
    env["TEST_DIR"] = TESTS
    env["TERMGYM_PROTECTION"] = config["protection"]
    python = " ".join(config["toolchain"]["python"]) if config["toolchain"] else sys.executable
    env["TERMGYM_PYTEST"] = f"{python} -I -B {os.path.abspath(__file__)} pytest"
    env["TERMGYM_PYTEST_LOG"] = os.path.join(results_dir, ".pytest-reports.jsonl")
    config["cwd"] = os.environ.get("TERMGYM_WORKDIR", "/")
    if not os.path.isdir(config["cwd"]):
        config["cwd"] = "/"
    code, output = run_script(config, env, results_dir)
    if config["verdict"] == "harbor-reward":
        verdict = _verdict_harbor(code)
    elif config["protection"] == "clean":
        verdict = _verdict_tb(_reports(env["TERMGYM_PYTEST_LOG"]), "pytest reports")
    else:
        verdict = _verdict_tb(parse_summary(output), "test output")
    verdict["exit_code"] = code
    verdict["output"] = output[-3000:]
    with open(os.path.join(results_dir, "verdict.json"), "w") as handle:
        json.dump(verdict, handle)


def _reports(path):
    """Test name -> status from the pytest runs of the script; None when none ran -rA-like
    (Terminal-Bench reads the summary, which lists every test only with -rA)."""
    if not os.path.isfile(path):
        return None
    results = {}
    listed = False
    with open(path) as handle:
        for line in handle:
            entry = json.loads(line)
            listed = listed or entry.get("summary", False)
            for name, status in entry.get("tests", {}).items():
                results[name] = status
    if not listed and all(s in _PASSING for s in results.values()):
        return None  # no failure and no -rA: pytest printed no summary at all
    if not listed:
        return {n: s for n, s in results.items() if s not in _PASSING}
    return results


def _images_plugins(is_agents):
    """The modules of the pytest plugins installed on the snapshot or the toolchain (entry
    points of the group pytest11, which pytest would load by itself) that are none of the
    agent's: neither their entry point nor their module. Found without importing anything
    (a package's own code runs when one of its modules is looked for by importlib.util)."""
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7: pytest then loads no plugin but those named
        return []
    import importlib.machinery

    found = []
    for dist in metadata.distributions():
        where = getattr(dist, "_path", None)
        for point in dist.entry_points:
            if point.group != "pytest11":
                continue
            module = point.value.partition(":")[0].strip()
            top, _, rest = module.partition(".")
            spec = importlib.machinery.PathFinder.find_spec(top)
            origin = getattr(spec, "origin", None)
            files = [str(where) + "/entry_points.txt" if where is not None else None, origin]
            if origin and rest:
                folder = os.path.dirname(origin)
                files.append(os.path.join(folder, *rest.split(".")) + ".py")
            if all(f and not is_agents(f) for f in files) and module not in found:
                found.append(module)
    return found


def pytest_main(args):
    """pytest in this process, as root: the programs the tests start run as the agent's
    user; each test's outcome is recorded in TERMGYM_PYTEST_LOG (root's, in the result
    folder) as the short test summary would list it."""
    sys.path[:] = [p for p in sys.path if p not in ("", HERE, os.getcwd())] + [HERE]
    import termgym_agentcode
    import termgym_agentexec

    snapshot = bool(os.environ.get("TERMGYM_TOOLCHAIN"))
    if snapshot:  # the snapshot's packages importable, pytest the toolchain's, and what of
        # the agent's its tests load recorded; its work itself refused, as on a clean
        # verifier (the import scan found the tests do not load it; if they do, fail closed)
        import termgym_snapshot

        work = os.environ.get("TERMGYM_WORKDIR", "/app").rstrip("/") + "/"

        def refuse(path):  # in the work, or there through a link of the agent's
            inside = any(str(p).startswith(work) for p in (path, os.path.realpath(str(path))))
            return termgym_agentcode.refusal(path) if inside else None

        termgym_snapshot.prepare_python(refuse)
    termgym_agentexec.install()
    if os.environ.get("TERMGYM_PROTECTION") == "clean":  # its programs see no tests, no logs
        termgym_agentexec.hide([TESTS, LOGS])
    import pytest

    class Recorder:
        def __init__(self):
            self.tests = {}
            self.summary = False

        def pytest_configure(self, config):
            chars = getattr(config.option, "reportchars", "") or ""
            self.summary = "A" in chars or ("p" in chars and "f" in chars)

        def pytest_sessionstart(self, session):
            # After every plugin's configure: pytest's tmpdir plugin makes the factory there.
            factory = getattr(session.config, "_tmp_path_factory", None)
            if factory is not None:
                termgym_agentexec.share(str(factory.getbasetemp()))

        def pytest_runtest_logreport(self, report):
            name = report.nodeid.split("::")[-1]
            if report.when == "call" or report.outcome != "passed":
                status = report.outcome.upper()
                if hasattr(report, "wasxfail"):
                    status = "XFAIL" if report.skipped else "XPASS"
                if report.when != "call" and report.failed:
                    status = "ERROR"
                if status != "PASSED" or name not in self.tests:
                    self.tests[name] = status

        def pytest_runtest_teardown(self, item):
            termgym_agentexec.stop_agent_processes(keep_nest=True)

        def pytest_sessionfinish(self, session):
            termgym_agentexec.stop_agent_processes()

        def pytest_collectreport(self, report):
            if report.failed:
                self.tests[report.nodeid or "collection"] = "ERROR"

    recorder = Recorder()
    if not snapshot:  # on a snapshot its code loaded here is recorded, and the verdict marked
        termgym_agentcode.guard_agent_code()
    # The agent's workdir is the current directory: a pytest.ini, conftest.py or cache it
    # left there must not configure the tests (the tests folder's own ini still does).
    own_ini = any(
        os.path.isfile(os.path.join(TESTS, n))
        for n in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
    )
    fixed = ["-p", "no:cacheprovider", "--rootdir", TESTS]
    if snapshot:  # no plugin the agent installed (an entry point of its) loads in here
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        for module in _images_plugins(termgym_snapshot.changed_listed()):
            fixed += ["-p", module]
    if not own_ini:
        fixed += ["-c", os.devnull]
    if not any(a == "--basetemp" or str(a).startswith("--basetemp=") for a in args):
        # pytest's default, /tmp/pytest-of-root/, is 0700: the programs the tests start (as
        # the agent's user) could not reach the tmp_path folders handed to them.
        import tempfile

        scratch = tempfile.mkdtemp(prefix="termgym-pytest-")
        os.chmod(scratch, 0o711)
        fixed += ["--basetemp", os.path.join(scratch, "tmp")]
    code = pytest.main(fixed + list(args), plugins=[recorder])
    log = os.environ.get("TERMGYM_PYTEST_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(
                json.dumps(
                    {"tests": recorder.tests, "summary": recorder.summary, "exit": int(code)}
                )
                + "\n"
            )
    return int(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["pytest"]:
        sys.exit(pytest_main(sys.argv[2:]))
    main()
