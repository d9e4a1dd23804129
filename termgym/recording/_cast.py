"""Reading an episode's asciicast v2 file and replaying it to the screen after any step."""

from __future__ import annotations

import bisect
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym.errors import RecordingError
from termgym.screen import ScreenSnapshot, TerminalScreen

_CHECKPOINT_CHARS = 100_000  # about this much output between two checkpoints


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
    first = data.find(b"\n")
    try:
        header = json.loads(data[: first if first >= 0 else len(data)])
        if not isinstance(header, dict) or header.get("version") != 2:
            raise ValueError("not an asciicast v2 header")
    except ValueError as exc:
        raise RecordingError(f"expected an asciicast v2 header line; found {exc}") from exc
    index = CastIndex(header, [], {}, [])
    _index_events(index, data, first + 1 if first >= 0 else len(data), note_partial=True)
    return index


def _index_events(index: CastIndex, data: bytes, start: int, note_partial: bool) -> int:
    """Add the complete event lines of data[start:] to `index`; return where indexing stopped."""
    lines, markers = index.lines, index.markers
    size = len(data)
    find = data.find
    while start < size:
        nl = find(b"\n", start)
        if nl < 0:
            if note_partial:
                index.skipped.append(f"cast: incomplete last event ({size - start} bytes) left out")
            break
        if nl > start:
            line = data[start:nl]
            if b', "m", "step ' in line:
                try:
                    label = json.loads(line)[2]
                    markers[int(label.split()[1])] = len(lines)
                except (ValueError, IndexError, TypeError):
                    index.skipped.append(f"cast: unreadable marker at byte {start}")
            lines.append((start, nl))
        start = nl + 1
    return start


class CastReplay:
    """Replays a cast through a TerminalScreen to the screen after any step.

    Keeps a checkpoint about every 100,000 characters of output, so moving around replays
    little; a far jump replays the output in one pass that skips what scrolls off unseen.
    Thread-safe: a background thread may `warm()` (fill in every checkpoint) while a UI asks
    for screens.

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
        self._cp_pos: list[int] = [0]  # sorted positions of checkpoints
        self._cp_snap: list[ScreenSnapshot] = [self._screen.snapshot()]
        self._dense_upto = 0  # checkpoints are no further apart than the interval up to here
        self._lock = threading.Lock()

    @property
    def steps(self) -> int:
        """How many step markers the cast holds."""
        return len(self.index.markers)

    def refresh(self) -> int:
        """Take in events appended to the file since it was read (a live episode).

        Returns how many step markers arrived.
        """
        with self._lock:
            end = self._data.rfind(b"\n") + 1
            try:
                with open(self.path, "rb") as f:
                    f.seek(end)
                    more = f.read()
            except OSError:
                return 0
            if not more:
                return 0
            self._data = self._data[:end] + more
            before = len(self.index.markers)
            _index_events(self.index, self._data, end, note_partial=False)
            return len(self.index.markers) - before

    def _texts(self, lo: int, hi: int) -> tuple[list[str], list[int]]:
        """Output texts of events lo..hi-1 and the position after each."""
        lines, data = self.index.lines, self._data
        texts: list[str] = []
        ends: list[int] = []
        for p in range(lo, hi):
            start, end = lines[p]
            if data[start + 1 : end].find(b'"o"') < 0:
                continue
            try:
                event = json.loads(data[start:end])
            except ValueError:
                continue
            if len(event) >= 3 and event[1] == "o" and isinstance(event[2], str):
                texts.append(event[2])
                ends.append(p + 1)
        return texts, ends

    def _checkpoint(self) -> None:
        i = bisect.bisect_left(self._cp_pos, self._pos)
        if i < len(self._cp_pos) and self._cp_pos[i] == self._pos:
            return
        self._cp_pos.insert(i, self._pos)
        self._cp_snap.insert(i, self._screen.snapshot())

    def _feed_to(self, pos: int) -> None:
        texts, ends = self._texts(self._pos, pos)
        total = sum(map(len, texts))
        cut = 0
        if total > 4 * _CHECKPOINT_CHARS:
            # A far jump: one pass over all but the last stretch, skipping what scrolls off.
            left, cut = total, 0
            while cut < len(texts) and left > _CHECKPOINT_CHARS:
                left -= len(texts[cut])
                cut += 1
            self._screen.feed_text("".join(texts[:cut]), skip_scrolled=True)
            self._pos = ends[cut - 1]
            self._checkpoint()
        batch: list[str] = []
        size = 0
        for text, end in zip(texts[cut:], ends[cut:], strict=True):
            batch.append(text)
            size += len(text)
            if size >= _CHECKPOINT_CHARS:
                self._screen.feed_text("".join(batch), skip_scrolled=True)
                self._pos = end
                self._checkpoint()
                batch, size = [], 0
        if batch:
            self._screen.feed_text("".join(batch), skip_scrolled=True)
        self._pos = pos

    def _seek(self, pos: int) -> None:
        i = bisect.bisect_right(self._cp_pos, pos) - 1
        best = self._cp_pos[i]
        if pos < self._pos or best > self._pos:
            self._screen.restore(self._cp_snap[i])
            self._pos = best
        self._feed_to(pos)

    def position_of(self, step: int) -> int:
        """The event position just after step `step`'s marker (the end when unknown)."""
        marker = self.index.markers.get(step)
        return len(self.index.lines) if marker is None else marker + 1

    def screen_after(self, step: int) -> TerminalScreen:
        """The screen right after step `step` (a fresh copy the caller may keep)."""
        with self._lock:
            self._seek(self.position_of(step))
            copy = TerminalScreen(self.cols, self.rows)
            copy.restore(self._screen.snapshot())
            return copy

    def warm(self, stop: threading.Event | None = None) -> None:
        """Fill in checkpoints over the whole cast, so later seeks anywhere are fast.

        Works in small locked slices, so `screen_after` calls from other threads interleave.
        """
        lines = self.index.lines
        while self._dense_upto < len(lines) and not (stop and stop.is_set()):
            with self._lock:
                self._seek(self._dense_upto)
                texts, _ = self._texts(self._pos, min(self._pos + 2048, len(lines)))
                size, hi = 0, self._pos
                for p in range(self._pos, min(self._pos + 2048, len(lines))):
                    hi = p + 1
                    start, end = lines[p]
                    size += end - start
                    if size >= _CHECKPOINT_CHARS:
                        break
                self._feed_to(hi)
                self._checkpoint()
                self._dense_upto = hi
