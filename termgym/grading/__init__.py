"""Grading: grader kinds, the in-sandbox runner, verdicts and shadow grading."""

from __future__ import annotations

from termgym.grading._base import BaseGrader, Grader, Job, JobOutput, Outcome
from termgym.grading._registry import (
    ENTRY_POINT_GROUP,
    grader_kind,
    grader_kinds,
    register_grader,
    unregister_grader,
)
from termgym.grading._verdict import EpisodeClass, GradeReport, GraderResult, Verdict, classify
from termgym.grading._verifier import ColdStarts, SandboxSource, verifier_config

__all__ = [
    "ENTRY_POINT_GROUP",
    "BaseGrader",
    "ColdStarts",
    "EpisodeClass",
    "GradeReport",
    "Grader",
    "GraderResult",
    "Job",
    "JobOutput",
    "Outcome",
    "SandboxSource",
    "Verdict",
    "classify",
    "grade",
    "grade_rulesets",
    "grader_kind",
    "grader_kinds",
    "prepare",
    "register_grader",
    "unregister_grader",
    "verifier_config",
]


def __getattr__(name: str):  # the runner needs termgym.sandbox and termgym.tasks: import lazily
    if name in ("grade", "grade_rulesets", "prepare"):
        from termgym.grading import _runner

        return getattr(_runner, name)
    raise AttributeError(f"module 'termgym.grading' has no attribute {name!r}")
