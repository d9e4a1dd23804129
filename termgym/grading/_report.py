"""The runner's report: found, authenticated and validated on the host, or a GraderError.

The runner writes exactly one line on a channel only it holds (its stdout, kept close-on-
exec while fds 1 and 2 become /dev/null for everything it starts): "TERMGYM-REPORT
<payload> <hmac>", where the HMAC-SHA256 key was made for this grading only and never
entered a sandbox's files (it reaches the runner on its stdin, or a cold exec's
environment, which the runner drops before any job starts), or, when the runner itself
failed, "TERMGYM-RUNNER-ERROR <why>". Anything else on the channel, a second line, a line
without a valid HMAC or a payload that is not exactly the documented shape is an error,
never a partial verdict.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from termgym.errors import GraderError

REPORT_PREFIX = "TERMGYM-REPORT "
RUNNER_ERROR = "TERMGYM-RUNNER-ERROR "
MAX_REPORT = 64 << 20
"""Bytes of decompressed report accepted (every run's files are capped by the runner)."""


@dataclass(frozen=True)
class RunnerReport:
    """What one authentic report holds.

    Attributes:
        jobs: Job id -> its runs (validated dicts, read by the grader kinds).
        dumpable: The runner could not make itself non-dumpable (no ctypes in the image):
            a root process there could read its memory (docs/security.md).
        nest: Why the agent's programs could not run in nests of their own there ("": they
            did; docs/security.md).
        prepared: The jobs whose program the standby runner had loaded before the work
            arrived (termgym.grading._standby), run in a fork of it or in it.
        inline: Those of `prepared` run in the runner itself, not a fork of it (a
            verifier's only job: termgym.verifier.prepare's `run_here`).
        forked: The runner was a standby forked from a zygote (termgym.sandbox._zygote).
        imported: The modules a forked runner imported that its zygote had not loaded
            (each grading compiles them again); () for a runner not forked.
    """

    jobs: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    dumpable: bool = False
    nest: str = ""
    prepared: tuple[str, ...] = ()
    inline: tuple[str, ...] = ()
    forked: bool = False
    imported: tuple[str, ...] = ()


def new_key() -> str:
    """A fresh report key (hex), one per grading."""
    import secrets

    return secrets.token_hex(32)


def parse(output: str, key: str) -> Mapping[str, list[dict[str, Any]]] | None:
    """Job id -> runs of the authentic report in `output` (`read_report`); None if none."""
    report = read_report(output, key, alone=False)
    return None if report is None else report.jobs


def read_report(output: str, key: str, *, alone: bool = True) -> RunnerReport | None:
    """The authentic report that is the whole of `output`; None when `output` holds none.

    `alone=False` takes the first authentic line among others, as grading in place did
    (`grade_rulesets`, in a sandbox whose programs share the runner's stdout).

    Raises:
        GraderError: the channel carried something besides one authentic report (a second
            line, the runner's own failure), or the report is malformed.
    """
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return None
    if len(lines) == 1 and lines[0].startswith(RUNNER_ERROR):
        raise GraderError(f"the grading runner failed: {_runner_error(lines[0])}")
    authentic = [line for line in lines if _authentic(line, key)]
    if not authentic:
        return None
    if len(lines) > 1 and alone:
        raise GraderError(
            f"the grading runner's channel carried {len(lines) - 1} line(s) besides its report "
            f"(expected the report alone): {lines[0][:200]!r}"
        )
    payload = authentic[0][len(REPORT_PREFIX) :].rpartition(" ")[0]
    return _decode(payload)


def _authentic(line: str, key: str) -> bool:
    if not line.startswith(REPORT_PREFIX):
        return False
    payload, _, mac = line[len(REPORT_PREFIX) :].rpartition(" ")
    expected = hmac.new(key.encode(), payload.encode(), hashlib.sha256).hexdigest()
    return bool(payload) and hmac.compare_digest(mac.strip(), expected)


def _runner_error(line: str) -> str:
    raw = line[len(RUNNER_ERROR) :]
    try:
        text = json.loads(raw)
    except ValueError:
        text = raw
    return str(text)[-2000:]


def _decode(payload: str) -> RunnerReport:
    try:
        packed = base64.b64decode(payload, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_REPORT)
        if inflater.unconsumed_tail:
            raise GraderError(f"the grading report is larger than {MAX_REPORT >> 20} MiB")
        data = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise GraderError(f"the grading report could not be read: {exc}") from None
    if isinstance(data, list):  # the jobs alone, as runners before the runner facts wrote
        data = {"jobs": data, "runner": {"dumpable": True}}
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise GraderError(
            f"the grading report: expected {{'jobs': [...], 'runner': {{...}}}}, found "
            f"{type(data).__name__}"
        )
    runner = data.get("runner")
    if (
        not isinstance(runner, Mapping)
        or not isinstance(runner.get("dumpable"), bool)
        or not isinstance(runner.get("nest", ""), str)
        or not isinstance(runner.get("prepared", []), list)
        or not all(isinstance(j, str) for j in runner.get("prepared", []))
        or not isinstance(runner.get("inline", []), list)
        or not all(isinstance(j, str) for j in runner.get("inline", []))
        or not isinstance(runner.get("forked", False), bool)
        or not isinstance(runner.get("imported", []), list)
        or not all(isinstance(m, str) for m in runner.get("imported", []))
    ):
        raise GraderError(f"the grading report: malformed runner facts {runner!r:.200}")
    jobs: dict[str, list[dict[str, Any]]] = {}
    for job in data["jobs"]:
        if not isinstance(job, Mapping) or not isinstance(job.get("id"), str):
            raise GraderError(f"the grading report: expected jobs with an id, found {job!r:.200}")
        runs = job.get("runs")
        if not isinstance(runs, list) or not all(_valid_run(r) for r in runs):
            raise GraderError(f"the grading report: malformed runs of job {job['id']!r}")
        jobs[job["id"]] = list(runs)
    return RunnerReport(
        jobs=jobs, dumpable=runner["dumpable"], nest=runner.get("nest", ""),
        prepared=tuple(runner.get("prepared", [])), inline=tuple(runner.get("inline", [])),
        forked=runner.get("forked", False),
        imported=tuple(runner.get("imported", [])),
    )  # fmt: skip


_RUN_FIELDS: dict[str, tuple[type, ...]] = {
    "rulesets": (list,),
    "exit_code": (int, type(None)),
    "timed_out": (bool,),
    "duration": (int, float),
    "output": (str,),
    "files": (dict,),
    "error": (str, type(None)),
}


def _valid_run(run: object) -> bool:
    if not isinstance(run, Mapping):
        return False
    for name, types in _RUN_FIELDS.items():
        if name not in run or not isinstance(run[name], types):
            return False
    if isinstance(run["exit_code"], bool) or isinstance(run["duration"], bool):
        return False
    if not all(isinstance(n, str) for n in run["rulesets"]):
        return False
    files = run["files"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return False
    value = run.get("value")
    return value is None or isinstance(value, Mapping)
