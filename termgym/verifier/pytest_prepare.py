"""A pytest grader's tests, configured and collected by a standby runner before the work exists.

Injected with pytest graders as `termgym_pytest_prepare` (stdlib and pytest, Python 3.8+),
and named by the job's TERMGYM_PREPARE: `termgym_prepare` calls `prepare(args, names, work,
then)` in a standby runner (or a zygote) before any file of the agent's is there. pytest
runs as `python3 -m pytest args` would, with termgym's plugin (`termgym_pytest`) loaded for
the rule sets `names`, up to where the tests would start to run; there it hands a
`Prepared` to `then`, which never returns (the standby waits for its grading, the zygote
serves). At grading time `Prepared.run()`, in a fork of the runner (or in the runner
itself, for a verifier's only job: `termgym_prepare.run_here`) with the job's environment,
takes the rule sets' values, runs the collected tests and finishes the session as pytest's
own `wrap_session` does.

Collecting before the work exists is sound only for tests that do not look at the work
while they are collected: while they are, a program started, or one of the work's folders
opened or listed, refuses the preparation, and the job runs as usual at grading time (an
audit hook; a check that only stats a path is not seen). Every fork makes its own capture
files: the session's are closed before the first fork.
"""

import os
import sys

import pytest

PLUGIN = "termgym_pytest"
PREPARING = "TERMGYM_PREPARE_RULESETS"
"""While a job is prepared: the rule sets its tests will run under (JSON names)."""

_COLLECTING = [None, ""]  # the work's folders while collecting (None: not), why refused
_HOOKED = [False]


class NotPreparable(RuntimeError):
    """Collecting the tests before the work exists would not collect what the work holds."""


def _refuse(why):
    _COLLECTING[1] = why
    raise NotPreparable(why)


def _collection_guard(event, args):
    """Audit hook (the module docstring); a no-op once the tests are collected."""
    work = _COLLECTING[0]
    if work is None:
        return
    if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
                 "os.fork", "os.forkpty", "pty.spawn"):  # fmt: skip
        _refuse("the tests start a program while they are collected")
    if event in ("open", "os.listdir", "os.scandir", "glob.glob", "os.chdir") and args:
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str):
            path = os.path.abspath(path)
            if any(path == w or path.startswith(w.rstrip("/") + "/") for w in work):
                _refuse("the tests read the work while they are collected")


class _Pauser:
    """A plugin: where the tests would start to run, hand the session to `then` (once)."""

    def __init__(self, then):
        self.then = then
        self.continued = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if self.continued:
            return None  # the prepared session running, in a fork: as pytest runs it
        self.continued = True
        refused = _COLLECTING[1]
        _COLLECTING[:] = [None, ""]
        capture = session.config.pluginmanager.getplugin("capturemanager")
        if capture is not None:  # its files would be shared by every fork: each makes its own
            capture.stop_global_capturing()
        plugin = session.config.pluginmanager.get_plugin(PLUGIN)
        sound = plugin is not None and not (
            refused or session.testsfailed or session.shouldfail or session.shouldstop
        )
        if sound:
            _warm()
        self.then(Prepared(session, capture, plugin) if sound else None)
        return True  # not reached: `then` does not return


def _warm():
    """Compile here, once for every fork, what pytest's reports compile at their first use:
    the JUnit report's escape of the characters XML cannot hold (a regex over all of
    Unicode, some milliseconds to compile in each run)."""
    junit = sys.modules.get("_pytest.junitxml")
    escape = getattr(junit, "bin_xml_escape", None)
    if escape is not None:
        escape("")


def prepare(args, names, work, then):
    """Configure pytest with `args` and collect its tests for the rule sets `names` while the
    work (the folders `work`) does not exist yet; then `then(handle)` from where the tests
    would run: a Prepared, or None when it could not be done soundly. `then` does not
    return."""
    if not hasattr(sys, "addaudithook"):  # Python 3.7: what the tests do cannot be seen
        then(None)
        return
    if not _HOOKED[0]:
        sys.addaudithook(_collection_guard)
        _HOOKED[0] = True
    import json

    os.environ[PREPARING] = json.dumps(list(names))
    sys.modules.pop(PLUGIN, None)  # each prepared session loads a plugin of its own
    _COLLECTING[:] = [list(work), ""]
    pauser = _Pauser(then)
    try:
        pytest.main(list(args), plugins=[pauser])
    except NotPreparable:
        pass
    finally:
        _COLLECTING[:] = [None, ""]
        os.environ.pop(PREPARING, None)
    if not pauser.continued:
        then(None)


class Prepared:
    """A pytest session configured and collected before the work existed (`prepare`)."""

    def __init__(self, session, capture, plugin):
        self.session = session
        self.capture = capture
        self.plugin = plugin

    def run(self):
        """In a fork, with the job's environment: take the rule sets, run the collected
        tests and finish the session as pytest's `wrap_session` does; the exit status."""
        from _pytest.outcomes import Exit, Failed

        session, config = self.session, self.session.config
        self.plugin.begin(config)
        if self.capture is not None:
            self.capture.start_global_capturing()
        status = 0
        try:
            try:
                config.hook.pytest_runtestloop(session=session)
                if session.testsfailed:
                    status = 1
                elif session.testscollected == 0:
                    status = 5
            except pytest.UsageError:
                status = 4
            except Failed:
                status = 1
            except (KeyboardInterrupt, Exit) as exc:
                status = 2
                if isinstance(exc, Exit) and exc.returncode is not None:
                    status = exc.returncode
            except BaseException:  # noqa: B036 - what pytest calls an internal error
                import _pytest._code

                status = 3
                config.notify_exception(_pytest._code.ExceptionInfo.from_current(), config.option)
        finally:
            session.exitstatus = status
            os.chdir(str(getattr(session, "startpath", None) or config.invocation_params.dir))
            try:
                config.hook.pytest_sessionfinish(session=session, exitstatus=status)
            except Exit as exc:
                if exc.returncode is not None:
                    status = exc.returncode
            config._ensure_unconfigure()
        return int(status)
