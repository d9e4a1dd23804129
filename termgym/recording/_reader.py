"""Reading recordings back: whole episodes (lazily), whole runs, and live files being written."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from termgym.errors import RecordingError
from termgym.recording._records import (
    SCHEMA_VERSION,
    EpisodeEnd,
    EpisodeHeader,
    StepRecord,
    end_from,
    header_from,
    step_from,
)
from termgym.recording._run_files import read_run_header
from termgym.recording._signing import SIGNATURE, WHY_UNVERIFIED, Provenance, provenance

_STEP_PREFIX = b'{"type":"step"'
_LAZY_ABOVE = 4_000_000  # bytes: larger files parse their steps on demand


def _loads(line: bytes) -> Any:
    return json.loads(line.decode("utf-8", "replace"))


class StepList(Sequence[StepRecord]):
    """The steps of an episode, parsed from their JSONL lines on first access (then cached).

    A line that turns out unreadable when parsed gives a placeholder step whose `output`
    says so, and a note is appended to the owning log's `skipped` list.
    """

    def __init__(
        self,
        data: bytes,
        spans: list[tuple[int, int, int]],
        skipped: list[str],
        parsed: dict[int, StepRecord] | None = None,
        cache_size: int = 4096,
    ) -> None:
        self._data = data
        self._spans = spans  # (start, end, line number) per step
        self._skipped = skipped
        self._cache: OrderedDict[int, StepRecord] = OrderedDict()
        self._pinned = parsed or {}
        self._cache_size = cache_size

    def __len__(self) -> int:
        return len(self._spans)

    @overload
    def __getitem__(self, i: int) -> StepRecord: ...

    @overload
    def __getitem__(self, i: slice) -> list[StepRecord]: ...

    def __getitem__(self, i: int | slice) -> StepRecord | list[StepRecord]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self._spans)
        if not 0 <= i < len(self._spans):
            raise IndexError(i)
        if i in self._pinned:
            return self._pinned[i]
        hit = self._cache.get(i)
        if hit is not None:
            self._cache.move_to_end(i)
            return hit
        record = self._parse(i)
        self._cache[i] = record
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return record

    def __iter__(self) -> Iterator[StepRecord]:
        for i in range(len(self._spans)):
            yield self[i]

    def _parse(self, i: int) -> StepRecord:
        start, end, lineno = self._spans[i]
        try:
            return step_from(_loads(self._data[start:end]))
        except (ValueError, TypeError) as exc:
            note = f"line {lineno}: unreadable step line ({exc}); shown as a placeholder"
            if note not in self._skipped:
                self._skipped.append(note)
            return StepRecord(
                index=i, mode="command", action="", output=f"[{note}]", exit_code=None, duration=0.0
            )

    def raw_line(self, i: int) -> bytes:
        """The undecoded JSONL line of step i (for fast text search)."""
        start, end, _ = self._spans[i]
        return self._data[start:end]


@dataclass(frozen=True)
class EpisodeLog:
    """An episode read back from its JSONL file.

    Attributes:
        path: The JSONL file.
        header: The header, or None when the header line is missing or unreadable.
        steps: Every readable step termgym ran, in file order (parsed on demand for big
            files): what grading, the trace audit, replays and counts read.
        end: The end line, or None while the episode runs or after a crash.
        skipped: Human-readable notes on each truncated or corrupt line that was left out.
        read_upto: Byte offset just after the last complete line read (where to follow on).
        end_line: The line number of the end line (0: none), for messages about it.
        reported: The steps the agent's own log says it ran (`source` "agent", `within`
            the step of termgym's they ran in), in file order: for reading only.
        provenance: What the file proves of where it was written (termgym.recording.
            _signing): "signed" (by termgym's writer on this machine, unchanged since),
            "unsigned", "altered" or "elsewhere".
    """

    path: Path
    header: EpisodeHeader | None
    steps: StepList
    end: EpisodeEnd | None
    skipped: list[str] = field(default_factory=list)
    read_upto: int = 0
    end_line: int = 0
    reported: tuple[StepRecord, ...] = ()
    provenance: Provenance = "unsigned"

    @property
    def end_where(self) -> str:
        """Where the end line is, as messages name it: "<file>: line <n>"."""
        return f"{self.path}: line {self.end_line}"

    @property
    def episode_id(self) -> str:
        """The episode id (from the header, else the file name)."""
        return self.header.episode_id if self.header and self.header.episode_id else self.path.stem

    @property
    def cast_path(self) -> Path:
        """The asciicast file next to the JSONL file."""
        return self.path.with_suffix(".cast")

    @property
    def unverified(self) -> str | None:
        """Why this episode's verdicts are not this machine's to count (an imported
        trajectory's, a recording from elsewhere or changed since), or None when its
        recording proves it was written by a run here. An episode without an end line (still
        written, or cut short) is unsigned yet, and graded by nothing: None (it is counted
        as incomplete, apart from every rate)."""
        if self.provenance == "signed" or self.end is None:
            return None
        extra = self.header.extra if self.header is not None else {}
        if isinstance(extra, Mapping) and extra.get("imported_from"):
            return f"imported ({extra['imported_from']}): not graded here"
        return WHY_UNVERIFIED[self.provenance]

    @property
    def status(self) -> str:
        """ "error" (ended with an error), "done" (ended), or "open" (no end line yet)."""
        if self.end is None:
            return "open"
        return "error" if self.end.error else "done"


def _split_lines(data: bytes, skipped: list[str]) -> list[tuple[int, int, int]]:
    """(start, end, line number) of each complete, non-blank line; notes a partial last line."""
    spans: list[tuple[int, int, int]] = []
    start = 0
    lineno = 0
    find = data.find
    size = len(data)
    while start < size:
        lineno += 1
        nl = find(b"\n", start)
        if nl < 0:
            skipped.append(
                f"line {lineno}: incomplete last line ({size - start} bytes without a newline); "
                "the writer probably stopped mid-write"
            )
            break
        if nl > start:
            spans.append((start, nl, lineno))
        start = nl + 1
    return spans


def parse_episode_bytes(path: Path, data: bytes, lazy: bool | None = None) -> EpisodeLog:
    """Parse the bytes of an episode JSONL file (see `read_episode`)."""
    skipped: list[str] = []
    if lazy is None:
        lazy = len(data) > _LAZY_ABOVE
    header: EpisodeHeader | None = None
    end: EpisodeEnd | None = None
    end_line = 0
    step_spans: list[tuple[int, int, int]] = []
    parsed: dict[int, StepRecord] = {}
    reported: list[StepRecord] = []
    for start, stop, lineno in _split_lines(data, skipped):
        line = data[start:stop]
        if lazy and line.startswith(_STEP_PREFIX):
            if line.endswith(b"}"):
                step_spans.append((start, stop, lineno))
            else:
                skipped.append(f"line {lineno}: step line cut short (does not end with '}}')")
            continue
        try:
            obj = _loads(line)
            kind = obj.get("type") if isinstance(obj, dict) else None
        except ValueError as exc:
            skipped.append(f"line {lineno}: not JSON ({exc.__class__.__name__}: {exc})")
            continue
        try:
            if kind == "step":
                parsed[len(step_spans)] = step_from(obj)
                step_spans.append((start, stop, lineno))
            elif kind == "reported":
                reported.append(step_from(obj))
            elif kind == "header" and header is None:
                header = header_from(obj)
                schema = obj.get("schema")
                if isinstance(schema, int) and schema > SCHEMA_VERSION:
                    skipped.append(
                        f"line {lineno}: schema {schema} is newer than {SCHEMA_VERSION}; "
                        "unknown fields ignored"
                    )
            elif kind == "end":
                end, end_line = end_from(obj), lineno
            elif kind != SIGNATURE:  # the signature is read whole below
                skipped.append(f"line {lineno}: unexpected line type {kind!r}")
        except (TypeError, ValueError) as exc:
            skipped.append(f"line {lineno}: {kind} line has bad fields ({exc})")
    if header is None:
        skipped.insert(0, "header line missing or unreadable")
    steps = StepList(data, step_spans, skipped, parsed)
    read_upto = data.rfind(b"\n") + 1
    signed = provenance(data[:read_upto])
    return EpisodeLog(
        Path(path), header, steps, end, skipped, read_upto, end_line, tuple(reported), signed
    )


def read_episode(path: Path | str, lazy: bool | None = None) -> EpisodeLog:
    """Read an episode JSONL file, keeping whatever is readable.

    Args:
        path: The `.jsonl` file (a `.cast` path is mapped to its `.jsonl` sibling).
        lazy: Parse steps on demand (default: for files over 4 MB), checking at open only
            that each step line is whole; otherwise parse every line now.

    Raises:
        RecordingError: The file does not exist or cannot be read.
    """
    path = Path(path)
    if path.suffix == ".cast":
        path = path.with_suffix(".jsonl")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"expected a readable episode file at {path}; {exc.strerror}") from exc
    return parse_episode_bytes(path, data, lazy)


@dataclass(frozen=True)
class RunLog:
    """A run folder read back.

    Attributes:
        path: The run folder.
        header: run.json content, or None when absent or unreadable.
        episodes: Every episode, ordered by start time then id.
        skipped: Notes on what could not be read (run.json itself, files).
    """

    path: Path
    header: dict[str, Any] | None
    episodes: list[EpisodeLog]
    skipped: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        """The run id (run.json's, else the folder name)."""
        if self.header and isinstance(self.header.get("run_id"), str):
            return self.header["run_id"]
        return self.path.name


def episode_files(run_dir: Path) -> list[Path]:
    """The episode JSONL files of a run folder, sorted by name."""
    folder = Path(run_dir) / "episodes"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def read_run(run_dir: Path | str) -> RunLog:
    """Read a run folder: run.json and every episode under `episodes/`.

    Raises:
        RecordingError: `run_dir` is not a folder.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        found = (
            "a file (an episode file reads with read_episode)"
            if run_dir.exists()
            else ("no such folder")
        )
        raise RecordingError(f"expected a run folder at {run_dir}; found {found}")
    skipped: list[str] = []
    header = read_run_header(run_dir, skipped)
    episodes = []
    for path in episode_files(run_dir):
        try:
            episodes.append(read_episode(path))
        except RecordingError as exc:
            skipped.append(str(exc))
    episodes.sort(key=lambda e: (e.header.started if e.header else float("inf"), e.path.name))
    return RunLog(run_dir, header, episodes, skipped)


def latest_run(root: Path | str = "runs") -> Path | None:
    """The most recently started run folder under `root`, or None when there is none."""
    root = Path(root)
    if not root.is_dir():
        return None
    runs = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if not runs:
        return None
    return max(runs, key=lambda p: (p.stat().st_mtime, p.name))


class EpisodeFollower:
    """Follows an episode file while it is written: each `poll()` returns the new steps.

    A partially written last line is kept back until its newline arrives. The file may not
    exist yet. `header`, `end` and `skipped` are updated as lines arrive. Start at `offset`
    (e.g. `EpisodeLog.read_upto`) to follow on from an earlier `read_episode`.
    """

    def __init__(self, path: Path | str, offset: int = 0) -> None:
        self.path = Path(path)
        self.header: EpisodeHeader | None = None
        self.end: EpisodeEnd | None = None
        self.end_line = 0
        self.skipped: list[str] = []
        self.reported: list[StepRecord] = []
        self.steps_seen = 0
        self._offset = offset
        self._pending = b""
        self._lineno = 0

    @property
    def end_where(self) -> str:
        """Where the end line is, as messages name it: "<file>: line <n>"."""
        return f"{self.path}: line {self.end_line}"

    @property
    def finished(self) -> bool:
        """True once the end line was read."""
        return self.end is not None

    def poll(self) -> list[StepRecord]:
        """Read what was appended since the last call; return the steps among it (the steps
        the agent reported go to `reported`)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        self._offset += len(chunk)
        data = self._pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._pending = data
            return []
        self._pending = data[cut + 1 :]
        new: list[StepRecord] = []
        for line in data[:cut].split(b"\n"):
            self._lineno += 1
            if not line.strip():
                continue
            try:
                obj = _loads(line)
                kind = obj.get("type")
                if kind == "step":
                    new.append(step_from(obj))
                elif kind == "reported":
                    self.reported.append(step_from(obj))
                elif kind == "header":
                    self.header = header_from(obj)
                elif kind == "end":
                    self.end, self.end_line = end_from(obj), self._lineno
                elif kind != SIGNATURE:
                    self.skipped.append(f"line {self._lineno}: unexpected line type {kind!r}")
            except (ValueError, TypeError, AttributeError) as exc:
                self.skipped.append(f"line {self._lineno}: unreadable ({exc})")
        self.steps_seen += len(new)
        return new
