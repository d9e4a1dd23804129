"""Grader kinds: the contract a kind implements, the spec it is given, and the registry.

The lowest layer of grading: task loading validates every grader spec through its kind
(`Grader.job`), and episode grading (`termgym.grading`) runs the jobs. Bundled kinds
(`termgym.graders`) and third-party ones arrive through the same "termgym.graders"
entry-point group.
"""

from __future__ import annotations

from termgym.kinds._base import BaseGrader, Grader, Job, JobOutput, Outcome, tail
from termgym.kinds._registry import (
    ENTRY_POINT_GROUP,
    make_grader,
    register_grader,
    registered_graders,
    registry,
    unregister_grader,
)
from termgym.kinds._spec import GraderSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "BaseGrader",
    "Grader",
    "GraderSpec",
    "Job",
    "JobOutput",
    "Outcome",
    "make_grader",
    "register_grader",
    "registered_graders",
    "registry",
    "tail",
    "unregister_grader",
]
