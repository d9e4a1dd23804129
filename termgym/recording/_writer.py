"""The Recorder protocol and the JSONL + asciicast v2 writer, appending as the episode happens."""

from __future__ import annotations

import codecs
import json
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from termgym.errors import RecordingError
from termgym.recording._records import (
    EpisodeEnd,
    EpisodeHeader,
    StepRecord,
    dumps_line,
    end_line,
    header_line,
    reported_line,
    step_line,
)
from termgym.recording._run_files import write_run_header
from termgym.recording._signing import new_mac, signature_line

CAST_ENV = {"TERM": "xterm-256color", "SHELL": "/bin/bash"}


@runtime_checkable
class Recorder(Protocol):
    """Receives an episode as it happens. One recorder per episode."""

    def step(self, record: StepRecord) -> None:
        """Record one finished step."""

    def end(self, record: EpisodeEnd) -> None:
        """Record how the episode ended (called at most once)."""

    def close(self) -> None:
        """Release files; safe to call twice, and without `end` (a crashed episode)."""


class NullRecorder:
    """A Recorder that keeps nothing (recording off)."""

    def step(self, record: StepRecord) -> None:
        return None

    def end(self, record: EpisodeEnd) -> None:
        return None

    def close(self) -> None:
        return None


def _safe_name(episode_id: str) -> str:
    if not episode_id or "/" in episode_id or "\\" in episode_id or episode_id.startswith("."):
        raise RecordingError(
            f"episode_id must be a plain file name (no '/', not empty, not starting with '.'); "
            f"got {episode_id!r}"
        )
    return episode_id


class EpisodeWriter:
    """Writes one episode to `<run_dir>/episodes/<episode_id>.jsonl` and `.cast`.

    Every call appends its lines and flushes them to the OS, so a crash or `kill -9` of the
    writing process leaves every finished step readable; `end` and `close` also fsync.
    Overwriting an existing episode is refused. `end` signs the file with this machine's
    recording key (termgym.recording._signing): reports count an episode as graded only
    when its recording proves it was written here, unchanged.

    Args:
        run_dir: The run folder (created if missing).
        header: What the episode is; written at once as the first JSONL line.
        sign: Sign the recording (False: what is written is not this machine's to vouch
            for, such as an imported trajectory's claims).
    """

    def __init__(self, run_dir: Path, header: EpisodeHeader, *, sign: bool = True) -> None:
        name = _safe_name(header.episode_id)
        self.header = header
        self._mac = new_mac() if sign else None
        episodes = Path(run_dir) / "episodes"
        self.jsonl_path = episodes / f"{name}.jsonl"
        self.cast_path = episodes / f"{name}.cast"
        try:
            episodes.mkdir(parents=True, exist_ok=True)
            self._jsonl = open(self.jsonl_path, "xb")  # noqa: SIM115 - kept open for the episode
        except FileExistsError as exc:
            raise RecordingError(
                f"expected a new episode id in {episodes}; found {exc.filename} already there"
            ) from exc
        except OSError as exc:
            raise RecordingError(
                f"expected a run folder that can be written at {run_dir}: {exc}"
            ) from exc
        try:
            self._cast = open(self.cast_path, "xb")  # noqa: SIM115
        except OSError as exc:
            self._jsonl.close()
            self.jsonl_path.unlink()  # made empty just now: no half an episode left behind
            raise RecordingError(
                f"expected a new, writable {self.cast_path} beside {self.jsonl_path}: {exc}"
            ) from exc
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._steps = 0
        self._last_t = 0.0
        self._ended = False
        self._closed = False
        self._write(dumps_line(header_line(header)))
        cast_header = {
            "version": 2,
            "width": header.cols,
            "height": header.rows,
            "timestamp": int(header.started),
            "env": CAST_ENV,
            "title": f"{header.task} {header.episode_id}",
        }
        self._cast.write(dumps_line(cast_header))
        if header.initial_output:
            self._event(0.0, "o", self._decoder.decode(header.initial_output))
        self._jsonl.flush()
        self._cast.flush()

    def _event(self, t: float, kind: str, data: str) -> None:
        if t < self._last_t:
            t = self._last_t
        self._last_t = t
        self._cast.write(
            b"[%.6f, %s, %s]\n"
            % (t, b'"o"' if kind == "o" else b'"m"', json.dumps(data).encode("ascii"))
        )

    def step(self, record: StepRecord) -> None:
        """Append one step to both files and flush them (a step the agent reported, to the
        JSONL only: it has no terminal bytes)."""
        if self._closed or self._ended:
            raise RecordingError(
                f"expected an open episode for step {record.index}; "
                f"found it {'closed' if self._closed else 'ended'}"
            )
        if record.source == "agent":
            self._write(dumps_line(reported_line(record)))
            self._jsonl.flush()
            return
        line = dumps_line(step_line(record))
        if record.raw:
            text = self._decoder.decode(record.raw)
        elif record.output:
            text = record.output.replace("\n", "\r\n")
            if not text.endswith("\n"):
                text += "\r\n"
        else:
            text = ""
        if text:
            self._event(record.t, "o", text)
        self._event(record.t + record.duration, "m", f"step {record.index}")
        self._cast.flush()  # the cast first: a step readable in the JSONL has its screen
        self._write(line)
        self._jsonl.flush()
        self._steps += 1

    def end(self, record: EpisodeEnd) -> None:
        """Append the end line, then flush and fsync both files."""
        if self._closed or self._ended:
            raise RecordingError("expected an open episode to end; found it already ended")
        ended = record.ended if record.ended is not None else time.time()
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._event(self._last_t, "o", tail)
        line = dumps_line(end_line(record, ended, self._steps))
        if self._mac is not None:  # in one write with the end: no reader sees the end alone
            self._mac.update(line)
            line += signature_line(self._mac)
        self._jsonl.write(line)
        self._ended = True
        self._sync()

    def _write(self, line: bytes) -> None:
        if self._mac is not None:
            self._mac.update(line)
        self._jsonl.write(line)

    def _sync(self) -> None:
        for f in (self._jsonl, self._cast):
            f.flush()
            os.fsync(f.fileno())

    def close(self) -> None:
        """Flush, fsync (unless `end` just did) and close both files. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self._ended:  # `end` synced both files, and nothing is written after it
                self._sync()
        finally:
            self._jsonl.close()
            self._cast.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def new_run_id(now: float | None = None) -> str:
    """A sortable, unique run id: `YYYYmmdd-HHMMSS-xxxx`."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    return f"{stamp}-{secrets.token_hex(2)}"


class RunWriter:
    """A run folder: `run.json` plus one EpisodeWriter per episode.

    Episodes of a run may be written concurrently (each has its own files).

    Args:
        root: Where runs live (usually `./runs`).
        run_id: The run's id; a fresh `new_run_id()` when None.
        header: Initial run.json content (agent, config ...).
    """

    def __init__(
        self, root: Path, run_id: str | None = None, header: Mapping[str, Any] | None = None
    ) -> None:
        self.run_id = run_id or new_run_id()
        self.run_dir = Path(root) / self.run_id
        self._header: dict[str, Any] = {"run_id": self.run_id, "started": time.time()}
        self._header.update(header or {})
        write_run_header(self.run_dir, self._header)

    def episode(self, header: EpisodeHeader) -> EpisodeWriter:
        """Open the writer of one episode of this run."""
        return EpisodeWriter(self.run_dir, header)

    def finish(self, **fields: Any) -> None:
        """Mark the run finished in run.json (adds "finished" and any extra fields)."""
        self._header.update(fields)
        self._header.setdefault("finished", time.time())
        write_run_header(self.run_dir, self._header)
