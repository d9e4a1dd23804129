"""The `pytest` grader kind: test files run inside the sandbox, read from a JUnit XML report."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from termgym.errors import GraderError
from termgym.kinds import BaseGrader, GraderSpec, Job, JobOutput, Outcome
from termgym.kinds import tail as output_tail
from termgym.verifier import PYTEST_PLUGIN, PYTEST_PREPARE

_PLUGIN = PYTEST_PLUGIN
_PREPARE = PYTEST_PREPARE
_INI = b"[pytest]\njunit_family = xunit1\n"
# pytest exit codes: 0 all passed, 1 some failed; anything else is not a verdict.
_VERDICT_CODES = (0, 1)


class PytestGrader(BaseGrader):
    """Runs `path` (a test file or folder under graders/, or a list of them) with pytest.

    One pytest session covers every rule set: each test runs once per rule set (the `rules`
    fixture holds its values). Score = passed tests / tests run; passed = none failed.
    """

    kind = "pytest"

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        self.only_params(spec, {"path", "args"})
        raw = spec.params.get("path")
        paths = raw if isinstance(raw, list) else [raw]
        targets = []
        for index, _ in enumerate(paths):
            probe = GraderSpec.model_validate(
                {"name": spec.name, "kind": spec.kind, "path": paths[index]}
            )
            targets.append(self.grader_file(probe, task_root))
        args = spec.params.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"args: expected a list of strings, found {args!r}")
        argv = (
            "python3",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "termgym_pytest",
            "-c",
            "{graders}/termgym_pytest.ini",
            "--rootdir",
            "{graders}",
            "--confcutdir",
            "{graders}",
            "--junitxml",
            "{results}/junit.xml",
            "--basetemp",
            "{scratch}/tmp",
            "--tb=native",
            *args,
            *(f"{{graders}}/{t}" for t in targets),
        )
        env = {
            "PYTHONPATH": "{graders}",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTHONSAFEPATH": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "TERMGYM_PREPARE": "termgym_pytest_prepare",  # a standby may collect it early
        }
        files = {
            "termgym_pytest.py": _PLUGIN.read_bytes(),
            "termgym_pytest_prepare.py": _PREPARE.read_bytes(),
            "termgym_pytest.ini": _INI,
        }
        return Job(argv=argv, env=env, batch=True, files=files)

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        self.fail_on_error(spec, output)
        tail = output_tail(output.output, 1500)
        if output.exit_code not in _VERDICT_CODES:
            if output.exit_code == 5:
                what = "collected no tests"
            elif output.exit_code is not None and output.exit_code < 0:
                what = f"was killed by signal {-output.exit_code} (out of memory, or stopped)"
            else:
                what = f"exited {output.exit_code} (collection or usage error)"
            raise GraderError(f"grader {spec.name!r} (pytest) {what}:\n{tail}")
        report = output.files.get("junit.xml")
        if report is None:
            raise GraderError(f"grader {spec.name!r} (pytest) wrote no JUnit report:\n{tail}")
        cases = _cases(report, spec)
        outcomes = {}
        for name in output.rulesets:
            mine = [c for c in cases if c[0] == name]
            if not mine:
                raise GraderError(
                    f"grader {spec.name!r} (pytest) ran no test for rule set {name!r}"
                )
            ran = [c for c in mine if c[2] != "skipped"]
            failed = [c for c in ran if c[2] == "failed"]
            score = (len(ran) - len(failed)) / len(ran) if ran else 0.0
            message = "; ".join(f"{c[1]}: {c[3]}" for c in failed)[:2000]
            outcomes[name] = Outcome(
                score=score,
                passed=bool(ran) and not failed,
                message=message or f"{len(ran)} passed",
                details={"tests": len(ran), "failed": [c[1] for c in failed]},
            )
        return outcomes


def _cases(report: str, spec: GraderSpec) -> list[tuple[str, str, str, str]]:
    """(rule set, test name, passed|failed|skipped, message) per test case of the report."""
    try:
        root = ET.fromstring(report)
    except ET.ParseError as exc:
        raise GraderError(
            f"grader {spec.name!r} (pytest) wrote an unreadable report: {exc}"
        ) from None
    cases = []
    for case in root.iter("testcase"):
        ruleset = ""
        for prop in case.iter("property"):
            if prop.get("name") == "termgym_ruleset":
                ruleset = prop.get("value", "")
        name = case.get("name", "")
        name = name.split("[")[0] if ruleset else name
        status, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                status = "failed"
                text = (child.get("message") or child.text or child.tag).strip()
                message = text.splitlines()[0][:300] if text else child.tag
            elif child.tag == "skipped" and status == "passed":
                status = "skipped"
        cases.append((ruleset, name, status, message))
    return cases
