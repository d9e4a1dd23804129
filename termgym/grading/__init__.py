"""Episode grading: lay out an episode, and grade its final state in a clean verifier.

Above `termgym.tasks` and `termgym.sandbox`: `prepare` lays a task's files into an agent's
sandbox, `grade` judges the final state under the episode's rules and the shadow ones
(docs/security.md), and the verdict values (`Verdict`, `GradeReport`) are what it returns.
The grader contract and registry are `termgym.kinds`.
"""

from __future__ import annotations

from termgym.grading._inputs import (
    InputDifference,
    InputsComparison,
    compare_inputs,
    report_inputs,
)
from termgym.grading._launcher import OFF as NEST_LAUNCHER_OFF
from termgym.grading._launcher import nest_launcher
from termgym.grading._runner import (
    copy_limits,
    episode_files,
    grade,
    grade_rulesets,
    grade_rulesets_in,
    pooled_verifiers,
    prepare,
    verifier_standby,
)
from termgym.grading._standby import standby_spec
from termgym.grading._starts import ProgramStart
from termgym.grading._verdict import (
    EpisodeClass,
    GradeReport,
    GraderResult,
    RecordedOutcome,
    Verdict,
    classify,
)
from termgym.grading._verifier import ColdStarts, SandboxSource, verifier_config

__all__ = [
    "NEST_LAUNCHER_OFF",
    "nest_launcher",
    "ColdStarts",
    "EpisodeClass",
    "GradeReport",
    "GraderResult",
    "InputDifference",
    "InputsComparison",
    "ProgramStart",
    "RecordedOutcome",
    "SandboxSource",
    "Verdict",
    "classify",
    "compare_inputs",
    "copy_limits",
    "episode_files",
    "grade",
    "grade_rulesets",
    "grade_rulesets_in",
    "pooled_verifiers",
    "prepare",
    "report_inputs",
    "standby_spec",
    "verifier_config",
    "verifier_standby",
]
