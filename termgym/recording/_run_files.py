"""A run folder's own files, each written and read here only: run.json and results.jsonl.

`run.json` is the run's header (who ran what, and how), written whole and replaced
atomically. `results.jsonl` holds one `ResultLine` per finished attempt of an episode,
appended as each attempt ends; the last line of an episode is its result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym._vocabulary import EPISODE_STATUSES, EndClass, EpisodeStatus, Variant, as_variant
from termgym.recording._records import json_default

RUN_FILE = "run.json"
"""A run's header, at the top of its folder."""
RESULTS_FILE = "results.jsonl"
"""A run's results, beside its run.json."""


def run_json_path(run_dir: Path) -> Path:
    """Where a run's header lives."""
    return Path(run_dir) / RUN_FILE


@dataclass(frozen=True)
class ResultLine:
    """What came of one attempt of a run's episode: one line of results.jsonl.

    Attributes:
        episode_id: The episode (its recording is `episodes/<episode_id>.jsonl`).
        task: The task id.
        variant: The episode's variant.
        index: The episode's number among its (task, variant) pair's episodes.
        seed: The episode's seed.
        status: ok, agent-error or infra-error (`termgym._vocabulary.EpisodeStatus`).
        reward: The graders' score (0 unless status is ok).
        episode_class: The class the episode ended with (written as `class`), or None.
        steps: Steps the agent took.
        phases: Seconds spent per phase ("setup", "agent", "grading").
        agent_timed_out: The agent's time ran out and the state was graded as it was.
        error: The agent's exception, why grading failed, or the infrastructure error.
        attempts: How many attempts the episode had taken by this one.
    """

    episode_id: str
    task: str
    variant: Variant
    index: int = 0
    seed: int | None = None
    status: EpisodeStatus = "ok"
    reward: float = 0.0
    episode_class: EndClass | None = None
    steps: int = 0
    phases: Mapping[str, float] = field(default_factory=dict)
    agent_timed_out: bool = False
    error: str | None = None
    attempts: int = 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form: one line of results.jsonl."""
        return {
            "episode_id": self.episode_id,
            "task": self.task,
            "variant": self.variant,
            "index": self.index,
            "seed": self.seed,
            "status": self.status,
            "reward": self.reward,
            "class": self.episode_class,
            "steps": self.steps,
            "phases": dict(self.phases),
            "agent_timed_out": self.agent_timed_out,
            "error": self.error,
            "attempts": self.attempts,
        }

    @classmethod
    def from_dict(cls, data: Any) -> ResultLine:
        """Read the form `to_dict` writes (a field an older line lacks takes its default).

        Raises:
            ValueError: not an object, no episode id, or a field of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        if not data.get("episode_id"):
            raise ValueError(f"expected an episode_id, found the keys {sorted(data)}")
        status = data.get("status", "ok")
        if status not in EPISODE_STATUSES:
            expected = ", ".join(EPISODE_STATUSES)
            raise ValueError(f"status: expected one of {expected}, found {status!r}")
        seed, phases, error = data.get("seed"), data.get("phases") or {}, data.get("error")
        try:
            return cls(
                episode_id=str(data["episode_id"]),
                task=str(data.get("task", "")),
                variant=as_variant(data.get("variant")),
                index=int(data.get("index", 0)),
                seed=None if seed is None else int(seed),
                status=status,
                reward=float(data.get("reward") or 0.0),
                episode_class=data.get("class"),
                steps=int(data.get("steps") or 0),
                phases={str(k): float(v) for k, v in dict(phases).items()},
                agent_timed_out=bool(data.get("agent_timed_out", False)),
                error=None if error is None else str(error),
                attempts=int(data.get("attempts", 1)),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a field is mistyped: {exc}") from exc


def append_result(run_dir: Path, line: ResultLine) -> None:
    """Append one line to `<run_dir>/results.jsonl` (the caller serialises concurrent calls).

    A last line cut short (a run killed as it wrote it) is ended first, so that the new line
    stands on its own instead of being joined to it and lost with it."""
    with (Path(run_dir) / RESULTS_FILE).open("a+b") as handle:
        start = b""
        if handle.seek(0, os.SEEK_END) > 0:
            handle.seek(-1, os.SEEK_END)
            start = b"" if handle.read(1) == b"\n" else b"\n"
        handle.write(start + (json.dumps(line.to_dict()) + "\n").encode("utf-8"))


def read_results(run_dir: Path, skipped: list[str] | None = None) -> list[ResultLine]:
    """Every line of `<run_dir>/results.jsonl`, in order ([] when there is none).

    A line that is not a result (cut short by a crash, or foreign) is left out, and noted
    in `skipped` with its number and why."""
    path = Path(run_dir) / RESULTS_FILE
    if not path.is_file():
        return []
    out = []
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            out.append(ResultLine.from_dict(json.loads(raw)))
        except ValueError as exc:
            if skipped is not None:
                skipped.append(f"{RESULTS_FILE}:{number}: {exc}")
    return out


def last_results(run_dir: Path, skipped: list[str] | None = None) -> dict[str, ResultLine]:
    """Each episode's result: its last line in results.jsonl (one is appended per attempt)."""
    return {line.episode_id: line for line in read_results(run_dir, skipped)}


def write_whole(path: Path, text: str) -> Path:
    """Write `text` to `path` whole or not at all (a file beside it, then renamed over it):
    a writer that fails leaves the last complete file, never a truncated one. A character
    UTF-8 cannot hold (a lone surrogate an agent's output can carry) is written escaped."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8", errors="backslashreplace")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_run_header(run_dir: Path, header: Mapping[str, Any]) -> Path:
    """Write (or replace, atomically) `<run_dir>/run.json`; returns its path.

    Conventional keys: "run_id", "agent", "config", "started", and "finished" once done.
    """
    body = {"type": "run", "schema": 1, **header}
    text = json.dumps(body, indent=2, default=json_default) + "\n"
    return write_whole(run_json_path(Path(run_dir)), text)


def read_run_header(run_dir: Path, skipped: list[str] | None = None) -> dict[str, Any] | None:
    """run.json as a dict, or None (noting why in `skipped`)."""
    path = run_json_path(Path(run_dir))
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if skipped is not None:
            skipped.append(f"run.json unreadable ({exc})")
        return None
    return data if isinstance(data, dict) else None
