"""Reading an episode's asciicast v2 file and replaying it to the screen after any step."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym.errors import RecordingError
from termgym.screen import ScreenSnapshot, TerminalScreen

_CHECKPOINT_CHARS = 200_000  # feed at most about this much text between two checkpoints


@dataclass(frozen=True)
class CastIndex:
    """Where things are in a cast file, found without decoding its output events.

    Attributes:
        header: The asciicast v2 header.
        lines: (start, end) byte offsets of every complete event line.
        markers: step index -> position in `lines` of that step's marker event.
        skipped: Notes on lines that could not be read.
    """

    header: dict[str, Any]
    lines: list[tuple[int, int]]
    markers: dict[int, int]
    skipped: list[str] = field(default_factory=list)


def index_cast(data: bytes) -> CastIndex:
    """Index a cast file's bytes: header, event lines, and the "step N" markers."""
    skipped: list[str] = []
    first = data.find(b"\n")
    try:
        header = json.loads(data[: first if first >= 0 else len(data)])
        if not isinstance(header, dict) or header.get("version") != 2:
            raise ValueError("not an asciicast v2 header")
    except ValueError as exc:
        raise RecordingError(f"expected an asciicast v2 header line; found {exc}") from exc
    lines: list[tuple[int, int]] = []
    markers: dict[int, int] = {}
    start = first + 1 if first >= 0 else len(data)
    size = len(data)
    while start < size:
        nl = data.find(b"\n", start)
        if nl < 0:
            skipped.append(f"cast: incomplete last event ({size - start} bytes) left out")
            break
        if nl > start:
            line = data[start:nl]
            if b', "m", "step ' in line:
                try:
                    label = json.loads(line)[2]
                    markers[int(label.split()[1])] = len(lines)
                except (ValueError, IndexError, TypeError):
                    skipped.append(f"cast: unreadable marker at byte {start}")
            lines.append((start, nl))
        start = nl + 1
    return CastIndex(header, lines, markers, skipped)


class CastReplay:
    """Replays a cast through a TerminalScreen to the screen after any step.

    Keeps checkpoints as it goes, so going back or jumping far replays little. Thread-safe:
    a background thread may `warm()` while the UI asks for screens.

    Args:
        path: The `.cast` file.
        cols, rows: Screen size; the cast header's width and height by default.
    """

    def __init__(self, path: Path | str, cols: int | None = None, rows: int | None = None) -> None:
        self.path = Path(path)
        try:
            self._data = self.path.read_bytes()
        except OSError as exc:
            raise RecordingError(f"expected a cast file at {self.path}; {exc.strerror}") from exc
        self.index = index_cast(self._data)
        self.cols = cols or int(self.index.header.get("width", 120))
        self.rows = rows or int(self.index.header.get("height", 40))
        self._screen = TerminalScreen(self.cols, self.rows)
        self._pos = 0  # next event line to feed
        self._checkpoints: list[tuple[int, ScreenSnapshot]] = [(0, self._screen.snapshot())]
        self._fed_since_checkpoint = 0
        self._lock = threading.Lock()

    @property
    def steps(self) -> int:
        """How many step markers the cast holds."""
        return len(self.index.markers)

    def _feed_to(self, pos: int) -> None:
        lines = self.index.lines
        data = self._data
        while self._pos < pos:
            start, end = lines[self._pos]
            self._pos += 1
            try:
                event = json.loads(data[start:end])
            except ValueError:
                continue
            if len(event) >= 3 and event[1] == "o" and isinstance(event[2], str):
                self._screen.feed_text(event[2])
                self._fed_since_checkpoint += len(event[2])
                if self._fed_since_checkpoint >= _CHECKPOINT_CHARS:
                    self._checkpoints.append((self._pos, self._screen.snapshot()))
                    self._fed_since_checkpoint = 0

    def _seek(self, pos: int) -> None:
        if pos < self._pos or not self._checkpoints:
            best = max((c for c in self._checkpoints if c[0] <= pos), key=lambda c: c[0])
            self._screen.restore(best[1])
            self._pos = best[0]
            self._fed_since_checkpoint = 0
        else:
            best = max((c for c in self._checkpoints if c[0] <= pos), key=lambda c: c[0])
            if best[0] > self._pos:
                self._screen.restore(best[1])
                self._pos = best[0]
                self._fed_since_checkpoint = 0
        self._feed_to(pos)

    def position_of(self, step: int) -> int:
        """The event position just after step `step`'s marker (its end when unknown)."""
        marker = self.index.markers.get(step)
        return len(self.index.lines) if marker is None else marker + 1

    def screen_after(self, step: int) -> TerminalScreen:
        """The screen right after step `step` (a fresh copy the caller may keep)."""
        with self._lock:
            self._seek(self.position_of(step))
            copy = TerminalScreen(self.cols, self.rows)
            copy.restore(self._screen.snapshot())
            return copy

    def warm(self, upto: int | None = None) -> None:
        """Replay ahead (to step `upto`, or the end) so later seeks are fast."""
        target = len(self.index.lines) if upto is None else self.position_of(upto)
        chunk = 64
        while True:
            with self._lock:
                if self._pos >= target:
                    return
                self._seek(max(self._pos, min(self._pos + chunk, target)))
