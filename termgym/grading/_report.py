"""The runner's report: found, authenticated and validated on the host, or a GraderError.

The runner prints one line, "TERMGYM-REPORT <payload> <hmac>", where the HMAC-SHA256 key
was made for this grading only and never entered a sandbox's files (it reaches the runner
in its exec's environment, which the runner drops before any job starts). Lines without a
valid HMAC are ignored, however they look; a payload that is not exactly the documented
shape is an error, never a partial verdict.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import zlib
from collections.abc import Mapping
from typing import Any

from termgym.errors import GraderError

REPORT_PREFIX = "TERMGYM-REPORT "
MAX_REPORT = 64 << 20
"""Bytes of decompressed report accepted (every run's files are capped by the runner)."""


def new_key() -> str:
    """A fresh report key (hex), one per grading."""
    import secrets

    return secrets.token_hex(32)


def parse(output: str, key: str) -> dict[str, list[dict[str, Any]]] | None:
    """Job id -> runs from the authentic report line in `output`; None when there is none.

    Raises:
        GraderError: an authentic report that is malformed.
    """
    for line in output.splitlines():
        if not line.startswith(REPORT_PREFIX):
            continue
        payload, _, mac = line[len(REPORT_PREFIX) :].rpartition(" ")
        expected = hmac.new(key.encode(), payload.encode(), hashlib.sha256).hexdigest()
        if not payload or not hmac.compare_digest(mac.strip(), expected):
            continue
        return _decode(payload)
    return None


def _decode(payload: str) -> dict[str, list[dict[str, Any]]]:
    try:
        packed = base64.b64decode(payload, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_REPORT)
        if inflater.unconsumed_tail:
            raise GraderError(f"the grading report is larger than {MAX_REPORT >> 20} MiB")
        data = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError) as exc:
        raise GraderError(f"the grading report could not be read: {exc}") from None
    if not isinstance(data, list):
        raise GraderError(
            f"the grading report: expected a list of jobs, found {type(data).__name__}"
        )
    jobs: dict[str, list[dict[str, Any]]] = {}
    for job in data:
        if not isinstance(job, Mapping) or not isinstance(job.get("id"), str):
            raise GraderError(f"the grading report: expected jobs with an id, found {job!r:.200}")
        runs = job.get("runs")
        if not isinstance(runs, list) or not all(_valid_run(r) for r in runs):
            raise GraderError(f"the grading report: malformed runs of job {job['id']!r}")
        jobs[job["id"]] = list(runs)
    return jobs


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
