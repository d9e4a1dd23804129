"""The `script` grader kind: a program that writes a score between 0 and 1 to a file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from termgym.errors import GraderError
from termgym.kinds import BaseGrader, GraderSpec, Job, JobOutput, Outcome
from termgym.kinds import tail as output_tail


class ScriptGrader(BaseGrader):
    """Runs `path` (under graders/) with `interpreter` (default bash), once per rule set.

    The script reads the rules from $TERMGYM_RULES (JSON) or $TERMGYM_RULES_FILE and writes a
    number in [0, 1] to $TERMGYM_SCORE_FILE; passed = score >= pass_score (default 1). A
    script that writes no score, or a score outside [0, 1], is a grader error.
    """

    kind = "script"

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        self.only_params(spec, {"path", "interpreter", "pass_score"})
        path = self.grader_file(spec, task_root)
        interpreter = spec.params.get("interpreter", "bash")
        if not isinstance(interpreter, str) or not interpreter:
            raise ValueError(f"interpreter: expected a program name, found {interpreter!r}")
        float(spec.params.get("pass_score", 1.0))
        return Job(argv=(*interpreter.split(), f"{{graders}}/{path}"))

    def read(self, spec: GraderSpec, output: JobOutput) -> Mapping[str, Outcome]:
        self.fail_on_error(spec, output)
        raw = output.files.get("score")
        tail = output_tail(output.output, 800)
        if raw is None:
            raise GraderError(
                f"grader {spec.name!r} (script) wrote no score to "
                f"$TERMGYM_SCORE_FILE (exit {output.exit_code}):\n{tail}"
            )
        try:
            score = float(raw.strip())
        except ValueError:
            raise GraderError(
                f"grader {spec.name!r} (script): expected a number in the score "
                f"file, found {raw.strip()[:80]!r}"
            ) from None
        if not 0.0 <= score <= 1.0:
            raise GraderError(
                f"grader {spec.name!r} (script): expected a score in [0, 1], found {score}"
            )
        passed = score >= float(spec.params.get("pass_score", 1.0))
        outcome = Outcome(score=score, passed=passed, message=output_tail(tail, 300))
        return {name: outcome for name in output.rulesets}
