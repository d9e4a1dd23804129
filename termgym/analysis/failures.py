"""Why an episode failed: the failing tests of each rule set, by name, with their messages.

Read from a `GradeReport` (an end line's verdicts read back): a grader that names its
failing tests (`details["failed"]`, as the pytest kind does) gives one row per test, its
message cut out of the grader's; any other failing grader gives one row of its own; a
grader that could not run gives its error.
"""

from __future__ import annotations

from dataclasses import dataclass

from termgym.grading import GradeReport, GraderResult


@dataclass(frozen=True)
class Failure:
    """One failing test (or grader) under one rule set."""

    ruleset: str
    grader: str
    test: str
    message: str


def _messages(result: GraderResult, names: list[str]) -> dict[str, str]:
    """Each failing test's part of the grader's message ("name: message; name: ...")."""
    text = result.message
    starts = sorted((text.find(f"{name}: "), name) for name in names if text.find(f"{name}: ") >= 0)
    out = {}
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        out[name] = text[start + len(name) + 2 : end].rstrip("; ").strip()
    return out


def failures(report: GradeReport) -> list[Failure]:
    """Every failure of every rule set, the episode's own first."""
    names = [report.own, *(n for n in report.verdicts if n != report.own)]
    found: list[Failure] = []
    for name in names:
        verdict = report.verdicts.get(name)
        for result in verdict.results if verdict is not None else ():
            if result.error:
                found.append(Failure(name, result.grader, "", f"could not run: {result.error}"))
                continue
            if result.passed:
                continue
            failed = result.details.get("failed")
            tests = [str(t) for t in failed] if isinstance(failed, list) else []
            if not tests:
                found.append(Failure(name, result.grader, "", result.message))
                continue
            messages = _messages(result, tests)
            found += [Failure(name, result.grader, t, messages.get(t, "")) for t in tests]
    return found
