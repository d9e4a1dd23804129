"""Pytest plugin injected with pytest graders: the `rules` fixture, one run per rule set.

Loaded with `-p termgym_pytest`. Every test runs once per rule set named in
TERMGYM_RULESETS_FILE (or once, under "rules", from TERMGYM_RULES_FILE); the JUnit report
tags each test case with a `termgym_ruleset` property, and TERMGYM_RULES holds the rule
set's JSON while the test runs. Stdlib and pytest only.
"""

import json
import os

import pytest


def _load():
    path = os.environ.get("TERMGYM_RULESETS_FILE")
    if path:
        with open(path) as handle:
            return json.load(handle)
    path = os.environ.get("TERMGYM_RULES_FILE")
    if path:
        with open(path) as handle:
            return {"rules": json.load(handle)}
    return {"rules": json.loads(os.environ.get("TERMGYM_RULES", "{}"))}


RULESETS = _load()


def pytest_generate_tests(metafunc):
    if "termgym_ruleset" in metafunc.fixturenames:
        names = list(RULESETS)
        metafunc.parametrize("termgym_ruleset", names, ids=names, indirect=True)


@pytest.fixture(autouse=True)
def termgym_ruleset(request, record_property):
    """The name of the rule set this test run checks (autouse: every test runs per set)."""
    name = request.param
    record_property("termgym_ruleset", name)
    before = os.environ.get("TERMGYM_RULES")
    os.environ["TERMGYM_RULES"] = json.dumps(RULESETS[name])
    yield name
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
