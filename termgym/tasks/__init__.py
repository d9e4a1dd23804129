"""Tasks: task.yaml models, the loader, templates, variants and the registry of task folders."""

from __future__ import annotations

from termgym._task_paths import (
    BUNDLED,
    SPEC_FILE,
    TASKS_PATH_ENV,
    task_dirs,
    task_roots,
    tasks_in,
)
from termgym._vocabulary import VARIANTS
from termgym.kinds import GraderSpec
from termgym.tasks._draw import (
    CONTRADICT_MODES,
    ROTATIONS,
    SECRET_ENV,
    SPLITS,
    ContradictMode,
    Rotation,
    RotationScheme,
    RuleDraw,
    Split,
    period_of,
    secret_id,
)
from termgym.tasks._image import image_tag, task_image
from termgym.tasks._loader import Task, load_task, withheld_leaks
from termgym.tasks._registry import get_task, list_tasks
from termgym.tasks._solution import SolutionScript, SolutionStep, parse_solution, rule_files
from termgym.tasks._spec import (
    GradingSpec,
    ImpossibleSpec,
    Limits,
    RuleSpec,
    SurfaceSpec,
    TaskSpec,
)
from termgym.tasks._tamper import (
    SCRATCH,
    TAMPER_KINDS,
    TOOLCHAIN,
    TamperEvidence,
    TamperKind,
    category,
    evidence,
    protected_changes,
    protected_files,
)
from termgym.tasks._template import format_value, placeholders, render
from termgym.tasks._variants import (
    Conflict,
    EpisodePlan,
    RuleSet,
    contradicted_values,
    draw_value,
    impossible_values,
    instantiate,
    sampled_values,
    surface_values,
    switch_rules,
)

__all__ = [
    "SCRATCH",
    "TAMPER_KINDS",
    "TOOLCHAIN",
    "TamperEvidence",
    "TamperKind",
    "category",
    "evidence",
    "protected_changes",
    "protected_files",
    "CONTRADICT_MODES",
    "ROTATIONS",
    "SECRET_ENV",
    "SPLITS",
    "ContradictMode",
    "Rotation",
    "RotationScheme",
    "RuleDraw",
    "Split",
    "contradicted_values",
    "draw_value",
    "period_of",
    "secret_id",
    "switch_rules",
    "BUNDLED",
    "SPEC_FILE",
    "TASKS_PATH_ENV",
    "VARIANTS",
    "Conflict",
    "EpisodePlan",
    "GraderSpec",
    "GradingSpec",
    "ImpossibleSpec",
    "Limits",
    "RuleSet",
    "RuleSpec",
    "SolutionScript",
    "SolutionStep",
    "SurfaceSpec",
    "Task",
    "TaskSpec",
    "format_value",
    "get_task",
    "instantiate",
    "list_tasks",
    "load_task",
    "parse_solution",
    "placeholders",
    "render",
    "rule_files",
    "sampled_values",
    "surface_values",
    "impossible_values",
    "task_dirs",
    "tasks_in",
    "task_roots",
    "withheld_leaks",
    "image_tag",
    "task_image",
]
