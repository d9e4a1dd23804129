"""Pytest plugin injected with pytest graders: the `rules` fixture, one run per rule set.

Loaded with `-p termgym_pytest`. Every test runs once per rule set named in
TERMGYM_RULESETS_FILE (or once, under "rules", from TERMGYM_RULES_FILE), read once and
deleted; the JUnit report tags each test case with a `termgym_ruleset` property.
TERMGYM_RULES holds the rule set's JSON while a test runs (for graders that read it; the
programs they start never see it).

Programs the tests start run as the agent's unprivileged user (`termgym_agentexec`); the
temporary folders of `tmp_path` and `tmp_path_factory` are handed to that user before each
start, so they hold the inputs a test writes and the outputs the agent's program writes
(and nothing a test must keep from the agent). Whatever the agent's programs leave running
is killed after every test; the nest they ran in serves the session's next tests where it
can (`termgym_agentexec.stop_agent_processes`) and ends with the session. Stdlib and
pytest only.

Test ids name rule sets by position (`[r0]`, `[r1]`), never by name, so the per-test
temporary folders of `tmp_path` (named after the test id) do not tell the agent's program
which rule set it is run under. When the grading records inputs, each test (and rule set)
tells `termgym_agentexec` which starts are its own, and starts made while a fixture wider
than a function is set up are marked shared by every rule set.

The test process loads no code of the agent's: a file its user owns is refused to import,
compile or run here (`termgym_agentcode.guard_agent_code`); only programs the tests start
run the agent's code, as its user.

A standby runner may load the job before any work exists (`termgym_pytest_prepare`):
then TERMGYM_PREPARE_RULESETS names the rule sets the tests are collected for, and the
values, the temporary folders and the guard come when the collected tests run.
"""

import contextlib
import json
import os

import pytest
import termgym_agentcode
import termgym_agentexec

PREPARING = "TERMGYM_PREPARE_RULESETS"
"""While a job is prepared: the names of the rule sets its tests will run under (JSON)."""


def _load():
    names = os.environ.get(PREPARING)
    if names is not None:
        return {name: {} for name in json.loads(names)}  # the values come with the work
    for variable, wrap in (("TERMGYM_RULESETS_FILE", False), ("TERMGYM_RULES_FILE", True)):
        path = os.environ.get(variable)
        if path:
            with open(path) as handle:
                data = json.load(handle)
            with contextlib.suppress(OSError):
                os.remove(path)  # held in this process only from here on
            return {"rules": data} if wrap else data
    return {"rules": json.loads(os.environ.get("TERMGYM_RULES", "{}"))}


RULESETS = _load()
termgym_agentexec.install()
_SNAPSHOT = bool(os.environ.get("TERMGYM_TOOLCHAIN"))
"""Snapshot grading: the agent's code its tests load is recorded there (termgym_snapshot)."""
if PREPARING not in os.environ and not _SNAPSHOT:
    termgym_agentcode.guard_agent_code()


def _share_basetemp(config):
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        termgym_agentexec.share(str(factory.getbasetemp()))


def pytest_sessionstart(session):
    if PREPARING not in os.environ:  # a prepared session makes its folders when it runs
        _share_basetemp(session.config)


def pytest_generate_tests(metafunc):
    if "termgym_ruleset" in metafunc.fixturenames:
        names = list(RULESETS)
        ids = [f"r{index}" for index in range(len(names))]
        metafunc.parametrize("termgym_ruleset", names, ids=ids, indirect=True)


def _test_key(item):
    """The test's id without its rule set: the same test under every rule set."""
    params = dict(getattr(getattr(item, "callspec", None), "params", None) or {})
    ruleset = params.pop("termgym_ruleset", "")
    key = item.nodeid.split("[")[0]
    if params:
        key += "[" + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items())) + "]"
    return key, ruleset


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    if termgym_agentexec.recording():
        termgym_agentexec.context(*_test_key(item))
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    wide = fixturedef.scope != "function" and termgym_agentexec.recording()
    if wide:
        termgym_agentexec.shared_scope(True)
    try:
        yield
    finally:
        if wide:
            termgym_agentexec.shared_scope(False)


def pytest_sessionfinish(session):
    termgym_agentexec.stop_agent_processes()
    termgym_agentexec.flush_record()


@pytest.fixture(autouse=True)
def termgym_ruleset(request, record_property):
    """The name of the rule set this test run checks (autouse: every test runs per set)."""
    name = request.param
    record_property("termgym_ruleset", name)
    before = os.environ.get("TERMGYM_RULES")
    os.environ["TERMGYM_RULES"] = json.dumps(RULESETS[name])
    yield name
    termgym_agentexec.stop_agent_processes(keep_nest=True)
    if before is None:
        os.environ.pop("TERMGYM_RULES", None)
    else:
        os.environ["TERMGYM_RULES"] = before


@pytest.fixture
def rules(termgym_ruleset):
    """The rule values this test run enforces (a dict, fresh for each test)."""
    return json.loads(json.dumps(RULESETS[termgym_ruleset]))


@pytest.fixture
def workdir():
    """The task's working directory (where the agent worked)."""
    return os.environ.get("TERMGYM_WORKDIR", os.getcwd())


def begin(config):
    """A session collected before the work existed (`termgym_pytest_prepare`), about to run
    in a fork with its job's environment: the rule sets' values (under the names collected
    for), the agent's user's temporary folders, the guard."""
    fresh = _load()
    if list(fresh) != list(RULESETS):
        raise RuntimeError(
            f"the rule sets {list(fresh)!r} differ from those the tests were collected for "
            f"{list(RULESETS)!r}"
        )
    RULESETS.clear()
    RULESETS.update(fresh)
    termgym_agentexec.install()
    termgym_agentexec.reconfigure()
    if not _SNAPSHOT:
        termgym_agentcode.guard_agent_code()
    _share_basetemp(config)
