"""The `python` grader kind: a "module:function" from the task's graders/ folder."""

from __future__ import annotations

import re
from pathlib import Path

from termgym.kinds import BaseGrader, GraderSpec, Job


class PythonGrader(BaseGrader):
    """Calls `callable` ("module:function", module under graders/) inside the sandbox.

    The function gets `kwargs` plus `rules` (dict) and `workdir` (str) when it names them,
    and returns a bool, a score in [0, 1], (score_or_bool, message) or {"score", "passed",
    "message"}. Passed = score >= pass_score (default 1) unless it says `passed`.
    """

    kind = "python"

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        self.only_params(spec, {"callable", "kwargs", "pass_score"})
        target = spec.params.get("callable")
        if not isinstance(target, str) or not re.fullmatch(r"[\w.]+:\w+", target):
            raise ValueError(f"callable: expected 'module:function', found {target!r}")
        module = target.split(":")[0]
        rel = Path("graders", *module.split("."))
        if not ((task_root / rel).with_suffix(".py").is_file() or (task_root / rel).is_dir()):
            raise ValueError(
                f"callable: expected module {module!r} at {rel}.py under the task "
                "folder, found none"
            )
        kwargs = spec.params.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise ValueError(f"kwargs: expected a mapping, found {kwargs!r}")
        float(spec.params.get("pass_score", 1.0))
        return Job(call=target, kwargs=kwargs)
