"""What the hidden tests gave the agent's programs, per rule set, and whether it differed.

The verifier's recorder (`termgym_inputprint`, injected from termgym/verifier/inputprint.py)
writes one JSON line per program a grader started as the agent's user. Here, on the host,
those lines become `ProgramStart` values (`_starts`, on each `GraderResult`), and
`compare_inputs` matches the starts of the same test under the rule sets of one grading:
the k-th program a test starts must get the same arguments, working folder, environment,
named files, stdin and written files under every rule set. A difference means a program
could read the enforced rule off its inputs (docs/security.md); `termgym check` fails the
task on it.

The lines come from the grader's root process in the verifier, never from a program of the
agent's (which can neither read nor write the result folder), and only `termgym check`
acts on them: nothing here decides a verdict.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from termgym.grading._starts import ProgramStart
from termgym.grading._verdict import GradeReport


@dataclass(frozen=True)
class InputDifference:
    """The first way one test's programs were given different inputs under two rule sets."""

    grader: str
    test: str
    rulesets: tuple[str, str]
    what: str

    def __str__(self) -> str:
        test = self.test or self.grader
        return (
            f"the hidden tests' inputs differ between rule sets {self.rulesets[0]!r} and "
            f"{self.rulesets[1]!r}: test {test}, {self.what}"
        )


@dataclass(frozen=True)
class InputsComparison:
    """What comparing one grading's starts across its rule sets found."""

    starts: int
    compared: int
    differences: tuple[InputDifference, ...] = ()
    unreadable: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.differences and not self.unreadable


def compare_inputs(
    starts: Iterable[ProgramStart],
    unreadable: Sequence[str] = (),
    failed: Container[tuple[str, str, str]] = (),
) -> InputsComparison:
    """Match every test's starts across the rule sets it ran under (see the module docstring).

    `failed` holds (grader, rule set, test) for tests that failed: a failed test stops at its
    first failed assertion, so under that rule set only the starts it made are matched."""
    runs: dict[tuple[str, str], dict[str, list[ProgramStart]]] = {}
    total = 0
    for start in starts:
        total += 1
        if start.shared:
            continue  # a fixture shared by every rule set ran once: nothing to match
        runs.setdefault((start.grader, start.test), {}).setdefault(start.ruleset, []).append(start)
    differences: list[InputDifference] = []
    compared = 0
    for (grader, test), by_ruleset in sorted(runs.items()):
        names = list(by_ruleset)
        first = names[0]
        for other in names[1:]:
            compared += 1
            stopped = (grader, first, test) in failed or (grader, other, test) in failed
            what = _difference(by_ruleset[first], by_ruleset[other], first, other, stopped)
            if what:
                differences.append(InputDifference(grader, test, (first, other), what))
                break
    return InputsComparison(total, compared, tuple(differences), tuple(unreadable))


def _difference(
    one: Sequence[ProgramStart],
    two: Sequence[ProgramStart],
    first: str,
    second: str,
    stopped: bool = False,
) -> str:
    if stopped:
        one, two = one[: len(two)], two[: len(one)]
    if len(one) != len(two):
        return f"it started {len(one)} program(s) under {first!r} and {len(two)} under {second!r}"
    for number, (a, b) in enumerate(zip(one, two, strict=True), 1):
        where = f"program {number} ({_show(a.argv[0] if a.argv else '?')})"
        if len(a.argv) != len(b.argv):
            return f"{where}: {len(a.argv)} arguments against {len(b.argv)}"
        for index, (x, y) in enumerate(zip(a.argv, b.argv, strict=True)):
            if x != y:
                return f"{where}, argument {index}: {_show(x)} against {_show(y)}"
        if a.cwd != b.cwd:
            return f"{where}: working folder {_show(a.cwd)} against {_show(b.cwd)}"
        for key in sorted(set(a.env) | set(b.env)):
            if a.env.get(key) != b.env.get(key):
                return (
                    f"{where}, environment variable {key}: {_show(a.env.get(key))} against "
                    f"{_show(b.env.get(key))}"
                )
        for key in sorted(set(a.named) | set(b.named)):
            if a.named.get(key) != b.named.get(key):
                label = key.replace("arg ", "argument ", 1)
                name = _argument(a, key)
                return f"{where}, {label} ({_show(name)}): the file or folder it names differs"
        if a.stdin != b.stdin:
            return f"{where}: its standard input differs"
        for key in sorted(set(a.given) | set(b.given)):
            if a.given.get(key) != b.given.get(key):
                if key not in a.given or key not in b.given:
                    return f"{where}: the test wrote {_show(key)} under one rule set only"
                return f"{where}: the file {_show(key)} the test wrote differs"
    return ""


def _argument(start: ProgramStart, key: str) -> str:
    kind, _, rest = key.partition(" ")
    if kind == "arg" and rest.isdigit() and int(rest) < len(start.argv):
        return start.argv[int(rest)]
    return start.env.get(rest, rest)


def _show(value: str | None, limit: int = 80) -> str:
    if value is None:
        return "(unset)"
    text = value if len(value) <= limit else value[: limit - 3] + "..."
    return repr(text)


def report_inputs(report: GradeReport) -> InputsComparison:
    """`compare_inputs` over every start a GradeReport's results recorded (each once, though
    rule sets with equal values share one run)."""
    seen: set[tuple[str, str, int]] = set()
    starts: list[ProgramStart] = []
    problems: list[str] = []
    failing: set[tuple[str, str]] = set()  # (grader, rule set) that failed somewhere
    named: dict[tuple[str, str], set[str]] = {}  # the failed tests' names, where known
    for verdict in report.verdicts.values():
        for result in verdict.results:
            if result.passed is not True:
                failing.add((result.grader, result.ruleset))
                names = result.details.get("failed") if result.details else None
                if isinstance(names, list):
                    named[(result.grader, result.ruleset)] = {str(n) for n in names}
            for problem in result.input_problems:
                if problem not in problems:
                    problems.append(problem)
            for start in result.starts:
                key = (start.grader, start.ruleset, start.index)
                if key not in seen:
                    seen.add(key)
                    starts.append(start)
    failed = set()
    for start in starts:
        where = (start.grader, start.ruleset)
        short = start.test.split("::")[-1].split("[")[0]
        if where in failing and (where not in named or short in named[where]):
            failed.add((start.grader, start.ruleset, start.test))
    return compare_inputs(starts, problems, failed)
