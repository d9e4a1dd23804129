"""The Grader protocol: a grader kind turns a spec into a job the verifier's runner executes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from termgym.errors import GraderError
from termgym.kinds._spec import GraderSpec


def tail(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, cut at a line start (never mid-line)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    newline = cut.find("\n")
    return "[...]\n" + (cut[newline + 1 :] if 0 <= newline < len(cut) - 1 else cut)


@dataclass(frozen=True)
class Job:
    """What the runner injected into the sandbox does for one grader.

    Either `argv` (a program run once per rule set, or once for all when `batch`) or `call`
    (a "module:function" the runner imports from the grader folder and calls in-process).
    In `argv` and `env`, "{graders}" is the injected grader folder and "{results}" the fresh
    result folder of that run; every program also gets TERMGYM_RULES (JSON),
    TERMGYM_RULES_FILE, TERMGYM_RESULT_DIR, TERMGYM_SCORE_FILE, TERMGYM_WORKDIR and, for a
    batch, TERMGYM_RULESETS_FILE (JSON object: rule-set name -> rules).

    Attributes:
        argv: Program and arguments (exec jobs).
        call: "module:function" (call jobs). The function takes keyword arguments `kwargs`
            plus `rules` and `workdir` when its signature names them.
        kwargs: Keyword arguments of a call; a string that is exactly "{{ rule }}" becomes
            the rule's value, other "{{ rule }}" inside strings are formatted in.
        env: Extra environment of an exec job.
        batch: Run the program once for every rule set (it reads TERMGYM_RULESETS_FILE).
        files: Support files to inject beside the task's grader files (name -> content).
    """

    argv: tuple[str, ...] = ()
    call: str | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    batch: bool = False
    files: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class JobOutput:
    """What one run of a job left behind, read back from the sandbox.

    Attributes:
        rulesets: The rule-set names this run covered (one, or all of a batch).
        exit_code: Exit status of an exec job (None when it timed out or for calls).
        timed_out: The run overran its timeout and was killed.
        duration: Seconds the run took inside the sandbox.
        output: The tail of the program's stdout and stderr (for messages, never for scores).
        files: Files the run wrote to its fresh result folder (name -> text).
        value: A call's return value, normalized to {"score", "passed", "message"}.
        error: A call's exception (traceback text), or why the run could not start.
    """

    rulesets: tuple[str, ...]
    exit_code: int | None = None
    timed_out: bool = False
    duration: float = 0.0
    output: str = ""
    files: Mapping[str, str] = field(default_factory=dict)
    value: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A grader's judgement of one final state under one rule set."""

    score: float
    passed: bool
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Grader(Protocol):
    """A grader kind. `job` is also how a spec is validated at load time: raise on bad params.

    `read` turns what the run left behind into an Outcome per rule set it covered; it raises
    GraderError when the run failed as infrastructure (crash, timeout, missing report),
    which is never a score of 0.
    """

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        """Describe what to run for this spec (raise ValueError on malformed params)."""

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        """Judge one run: rule-set name -> Outcome."""


class BaseGrader:
    """Helpers for grader kinds: param checking, grader-file paths, reading call results."""

    kind: str = ""

    def job(self, spec: GraderSpec, task_root: Path) -> Job:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def grader_file(spec: GraderSpec, task_root: Path, key: str = "path") -> str:
        """The spec's `key` param: a file under the task's graders/ folder, as a relative path."""
        value = spec.params.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"expected `{key}`: a file under the task folder, found {value!r}")
        path = (task_root / value).resolve()
        if not path.exists():
            raise ValueError(
                f"{key}: expected an existing file under the task folder, found no {value}"
            )
        if (task_root / "graders").resolve() not in path.parents:
            raise ValueError(
                f"{key}: expected a path under graders/ (hidden grader files), found {value}"
            )
        return Path(value).as_posix()

    @staticmethod
    def only_params(spec: GraderSpec, allowed: set[str]) -> None:
        """Raise ValueError naming any param the kind does not take."""
        unknown = sorted(set(spec.params) - allowed)
        if unknown:
            raise ValueError(
                f"kind {spec.kind} takes params {sorted(allowed)}, found unknown {unknown}"
            )

    @staticmethod
    def fail_on_error(spec: GraderSpec, output: JobOutput) -> None:
        """Raise GraderError if the run crashed or timed out."""
        if output.timed_out:
            raise GraderError(
                f"grader {spec.name!r} ({spec.kind}) timed out after {output.duration:.1f}s"
            )
        if output.error:
            raise GraderError(
                f"grader {spec.name!r} ({spec.kind}) crashed: {tail(output.error, 800)}"
            )

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        """Default for call jobs: the runner already normalized the call's return value."""
        self.fail_on_error(spec, output)
        value = output.value
        if not isinstance(value, dict) or "score" not in value:
            raise GraderError(
                f"grader {spec.name!r} ({spec.kind}) returned no result: {tail(output.output, 400)}"
            )
        pass_score = float(spec.params.get("pass_score", 1.0))
        score = float(value["score"])
        passed = bool(value.get("passed", score >= pass_score))
        outcome = Outcome(score=score, passed=passed, message=str(value.get("message", "")))
        return {name: outcome for name in output.rulesets}
