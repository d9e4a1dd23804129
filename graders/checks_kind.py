"""The `file`, `json` and `regex` grader kinds: declarative checks of the final files."""

from __future__ import annotations

from pathlib import Path

from termgym.kinds import BaseGrader, GraderSpec, Job
from termgym.verifier import CHECKS

_RUNTIME = {"termgym_checks.py": CHECKS.read_bytes()}


class _Check(BaseGrader):
    function = ""
    params: set[str] = set()

    def job(self, spec: GraderSpec, task_root: Path) -> Job:
        self.only_params(spec, self.params | {"path"})
        path = spec.params.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError(
                f"path: expected the checked file (relative to the workdir or "
                f"absolute), found {path!r}"
            )
        self.check(spec)
        return Job(call=f"termgym_checks:{self.function}", kwargs=spec.params, files=_RUNTIME)

    def check(self, spec: GraderSpec) -> None:
        """Kind-specific param checks."""


class FileCheck(_Check):
    """`path` exists (or not, `exists: false`), `contains` / `not_contains` text, `equals`."""

    kind = "file"
    function = "file_check"
    params = {"exists", "contains", "not_contains", "equals"}


class JsonCheck(_Check):
    """`path` is JSON; the value at dotted `key` `equals`, is within `min`/`max`, `contains`,
    has `length`. Values may be "{{ rule }}" to compare with the enforced rule value."""

    kind = "json"
    function = "json_check"
    params = {"key", "equals", "min", "max", "contains", "length"}


class RegexCheck(_Check):
    """`path`'s text matches `pattern` (multiline), `count` times if given; `expect: no-match`
    passes only when it never matches. The pattern may hold "{{ rule }}" placeholders."""

    kind = "regex"
    function = "regex_check"
    params = {"pattern", "expect", "count", "ignore_case"}

    def check(self, spec: GraderSpec) -> None:
        if not isinstance(spec.params.get("pattern"), str):
            raise ValueError(
                f"pattern: expected a regular expression, found {spec.params.get('pattern')!r}"
            )
        if spec.params.get("expect", "match") not in ("match", "no-match"):
            raise ValueError(
                f"expect: expected 'match' or 'no-match', found {spec.params.get('expect')!r}"
            )
