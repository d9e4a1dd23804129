"""The `imported-tests` grader kind: a Terminal-Bench or Harbor test script, run as its
harness runs it, inside the clean verifier (docs/importing.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from termgym.errors import GraderError
from termgym.kinds import BaseGrader, GraderSpec, Job, JobOutput, Outcome
from termgym.kinds import tail as output_tail
from termgym.verifier import IMPORTED

_RUNTIME = IMPORTED
VERDICTS = ("tb-pytest", "harbor-reward")
PROTECTIONS = ("clean", "agent-user")


class ImportedTestsGrader(BaseGrader):
    """Runs an imported task's test script once per rule set.

    Params: `script` (under graders/), `verdict` (tb-pytest: every test in pytest's short
    test summary passed; harbor-reward: /logs/verifier/reward.txt or reward.json),
    `protection` (clean | agent-user, decided by the importer), `script_at` (where the
    harness puts the script: /tests/run-tests.sh or /tests/test.sh), `env` (the verifier's
    environment), `pass_score`, and `rewrite` (the overlay's occurrences in graders/tests,
    filled in by the loader).
    """

    kind = "imported-tests"
    rewrites_files = True

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        self.only_params(
            spec, {"script", "verdict", "protection", "script_at", "env", "pass_score", "rewrite"}
        )
        probe = GraderSpec.model_validate(
            {"name": spec.name, "kind": spec.kind, "path": spec.params.get("script")}
        )
        script = self.grader_file(probe, task_root)
        verdict = spec.params.get("verdict")
        if verdict not in VERDICTS:
            raise ValueError(f"verdict: expected one of {list(VERDICTS)}, found {verdict!r}")
        protection = spec.params.get("protection", "clean")
        if protection not in PROTECTIONS:
            raise ValueError(
                f"protection: expected one of {list(PROTECTIONS)}, found {protection!r}"
            )
        script_at = spec.params.get("script_at", "/tests/run-tests.sh")
        if not isinstance(script_at, str) or not script_at.startswith("/tests/"):
            raise ValueError(f"script_at: expected a path under /tests/, found {script_at!r}")
        env = spec.params.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError(f"env: expected a mapping of strings, found {env!r}")
        rewrite = spec.params.get("rewrite", [])
        for span in rewrite:
            if not (task_root / "graders" / span["file"]).is_file():
                raise ValueError(f"rewrite: expected graders/{span['file']}, found none")
        float(spec.params.get("pass_score", 1.0))
        config = {
            "script": script.removeprefix("graders/"),
            "script_at": script_at,
            "verdict": verdict,
            "protection": protection,
            "env": env,
            "rewrite": rewrite,
        }
        files = {
            "termgym_imported.py": _RUNTIME.read_bytes(),
            "termgym_imported.json": json.dumps(config).encode(),
        }
        return Job(
            argv=("python3", "{graders}/termgym_imported.py"),
            # no bytecode switch in the environment: the job and its pytest run with -B, and
            # the programs the tests start inherit the image's environment, as under the
            # harness (they cache bytecode)
            env={"PYTHONPATH": "{graders}"},
            files=files,
        )

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        self.fail_on_error(spec, output)
        raw = output.files.get("verdict.json")
        if raw is None:
            raise GraderError(
                f"grader {spec.name!r} (imported-tests) left no verdict (exit "
                f"{output.exit_code}):\n{output_tail(output.output, 1500)}"
            )
        try:
            verdict = json.loads(raw)
        except ValueError:
            raise GraderError(f"grader {spec.name!r}: unreadable verdict {raw[:200]!r}") from None
        if "error" in verdict:
            raise GraderError(f"grader {spec.name!r} (imported-tests): {verdict['error']}")
        score = float(verdict["score"])
        passed = bool(verdict["passed"]) and score >= float(spec.params.get("pass_score", 1.0))
        message = str(verdict.get("message", ""))
        if not passed:
            message += "\n" + output_tail(str(verdict.get("output", "")), 600)
        outcome = Outcome(
            score=score,
            passed=passed,
            message=message.strip()[:2000],
            details={
                "tests": verdict.get("tests", {}),
                "source": verdict.get("source", ""),
                "exit_code": verdict.get("exit_code"),
            },
        )
        return {name: outcome for name in output.rulesets}
