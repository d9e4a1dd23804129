"""The grader-kind registry: entry points, registration, and what a miss says."""

from __future__ import annotations

import pytest

from termgym.errors import GraderError, UnknownGraderKind
from termgym.kinds import (
    ENTRY_POINT_GROUP,
    make_grader,
    register_grader,
    registered_graders,
    unregister_grader,
)


def test_bundled_kinds_come_from_the_entry_point_group():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {"pytest", "script", "file", "json", "regex", "python"} <= names
    assert names <= set(registered_graders())


def test_an_unknown_kind_suggests_the_closest():
    with pytest.raises(
        UnknownGraderKind, match=r"unknown grader kind 'scirpt'.*Did you mean 'script'"
    ):
        make_grader("scirpt")


def test_registering_a_taken_name_needs_override():
    with pytest.raises(ValueError, match=r"grader kind 'pytest' is already registered"):
        register_grader("pytest", "graders.pytest_kind:PytestGrader")


def test_a_registered_kind_that_is_no_grader_is_refused_by_name():
    register_grader("not-a-grader", "collections:OrderedDict")
    try:
        with pytest.raises(
            GraderError,
            match=r"grader kind 'not-a-grader'.*expected an object with job\(\) and read\(\)",
        ):
            make_grader("not-a-grader")
    finally:
        unregister_grader("not-a-grader")
