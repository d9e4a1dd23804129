"""A terminal screen emulator over pyte that keeps the alternate screen of vim, less and top."""

from __future__ import annotations

import codecs
import contextlib
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import pyte
from pyte.charsets import LAT1_MAP as _LAT1
from pyte.screens import Char, Cursor, Margins, StaticDefaultDict, wcwidth

from termgym._scrolloff import scrolled_off_regions
from termgym._vocabulary import TERMINAL

__all__ = [
    "MAX_CELL_CHARS",
    "Cell",
    "ScreenSnapshot",
    "StyledRun",
    "TerminalScreen",
    "screen_chars",
]

MAX_CELL_CHARS = 3
"""Code points one cell holds at most: its character and two zero-width ones after it
(combining marks, joiners). Further zero-width characters are dropped, as xterm keeps two
combining characters per cell by default; so a screen's text is bounded (`screen_chars`)."""


def screen_chars(cols: int, rows: int) -> int:
    """The most code points `TerminalScreen.text()` of a cols x rows screen can hold."""
    return rows * cols * MAX_CELL_CHARS + rows - 1


# Private DEC modes that switch to the alternate screen buffer (DECSET / DECRST).
_ALT_PLAIN = 47  # switch buffers only
_ALT_CLEAR = 1047  # switch; the alternate buffer is cleared on leaving
_ALT_CURSOR = 1049  # save cursor, switch and clear the alternate buffer; restore on leaving
_SAVE_CURSOR = 1048  # save / restore the cursor only
_ALT_MODES = frozenset({_ALT_PLAIN, _ALT_CLEAR, _ALT_CURSOR, _SAVE_CURSOR})

Cell = Char
"""One screen cell (pyte's Char): data, fg, bg, bold, italics, underscore, strikethrough,
reverse, blink. Colours are pyte names ("default", "red", "brightblue") or 6-digit hex."""


@dataclass(frozen=True)
class StyledRun:
    """A run of adjacent cells on one row sharing one style.

    Attributes:
        text: The characters (a wide character counts once; its stub cell is dropped).
        fg: Foreground colour: "default", a pyte colour name, or 6 hex digits.
        bg: Background colour, same forms as `fg`.
        bold, italics, underscore, strikethrough, reverse, blink: SGR attributes.
    """

    text: str
    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italics: bool = False
    underscore: bool = False
    strikethrough: bool = False
    reverse: bool = False
    blink: bool = False


@dataclass(frozen=True)
class ScreenSnapshot:
    """Everything needed to put a TerminalScreen back where it was (see `snapshot`)."""

    state: dict


class _AltScreen(pyte.Screen):
    """pyte.Screen plus DECSET/DECRST 47, 1047, 1048 and 1049 (the alternate screen), and a
    fast path for drawing plain ASCII text (the bulk of command output)."""

    def __init__(self, columns: int, lines: int) -> None:
        self.main_buffer: dict[int, StaticDefaultDict[int, Char]] | None = None
        self.alt_saved_cursor: Cursor | None = None
        self._glyph_cache: dict[Char, dict[str, Char]] = {}
        self.rendered: list[str] = [""] * lines  # text of each row, valid unless in `dirty`
        super().__init__(columns, lines)

    def index(self) -> None:
        # pyte shifts every row through the defaultdict (creating empty ones) and marks the
        # whole screen dirty on each scroll; without margins, move the rows and their rendered
        # text instead, so only the new bottom row is drawn again.
        if self.margins is not None or self.cursor.y != self.lines - 1:
            super().index()
            return
        old = self.buffer
        new = type(old)(old.default_factory)  # type: ignore[attr-defined]
        for y, row in old.items():
            if y > 0:
                new[y - 1] = row
        self.buffer = new
        self.rendered = [*self.rendered[1:], ""]
        bottom = self.lines - 1
        self.dirty = {y - 1 for y in self.dirty if y > 0}
        self.dirty.add(bottom)

    def draw(self, data: str) -> None:
        # pyte draws char by char (wcwidth, namedtuple _replace): ~2 µs each. Printable ASCII
        # in the Latin-1 charset without insert mode is one cell per char, so place it directly.
        if (
            not (data.isascii() and data.isprintable())
            or (self.g1_charset if self.charset else self.g0_charset) is not _LAT1
            or pyte.modes.IRM in self.mode
        ):
            self._draw_unicode(data)
            return
        cursor = self.cursor
        attrs = cursor.attrs
        glyphs = self._glyph_cache.get(attrs)
        if glyphs is None:
            if len(self._glyph_cache) > 512:
                self._glyph_cache.clear()
            glyphs = self._glyph_cache[attrs] = {}
        cols = self.columns
        autowrap = pyte.modes.DECAWM in self.mode
        i, n = 0, len(data)
        while i < n:
            if cursor.x >= cols:
                if autowrap:
                    self.dirty.add(cursor.y)
                    self.carriage_return()
                    self.linefeed()
                else:
                    cursor.x = cols - 1
            line = self.buffer[cursor.y]
            x = cursor.x
            chunk = data[i : i + cols - x]
            for ch in set(chunk).difference(glyphs):
                glyphs[ch] = attrs._replace(data=ch)
            line.update(zip(range(x, x + len(chunk)), map(glyphs.__getitem__, chunk), strict=True))
            cursor.x = x + len(chunk)
            i += len(chunk)
        self.dirty.add(cursor.y)

    def _draw_unicode(self, data: str) -> None:
        # pyte stops drawing at the first zero-width character that is not a combining mark
        # (a zero-width space or joiner dropped the rest of the line) and stacks combining
        # marks without bound. Here each zero-width character joins the cell before it, up to
        # MAX_CELL_CHARS code points a cell; everything else goes to pyte's draw.
        start = 0
        for i, ch in enumerate(data):
            if wcwidth(ch) <= 0:
                if start < i:
                    super().draw(data[start:i])
                self._join_previous(ch)
                start = i + 1
        if start < len(data):
            super().draw(data[start:])

    def _join_previous(self, ch: str) -> None:
        if wcwidth(ch) < 0:
            return  # not printable: nothing to show
        cursor = self.cursor
        if cursor.x == self.columns and pyte.modes.DECAWM in self.mode:
            self.dirty.add(cursor.y)  # pyte wraps a pending line before any character
            self.carriage_return()
            self.linefeed()
        x, y = cursor.x - 1, cursor.y
        if x < 0:
            if y == 0:
                return
            x, y = self.columns - 1, y - 1
        line = self.buffer[y]
        if line[x].data == "" and x > 0:
            x -= 1  # the stub cell after a wide character: join the character itself
        cell = line[x]
        if len(cell.data) >= MAX_CELL_CHARS:
            return
        joined = cell.data + ch
        if unicodedata.combining(ch):
            normalized = unicodedata.normalize("NFC", joined)
            joined = normalized if len(normalized) <= MAX_CELL_CHARS else joined
        line[x] = cell._replace(data=joined)
        self.dirty.add(y)

    def reset(self) -> None:
        super().reset()
        self.main_buffer = None
        self.alt_saved_cursor = None

    @property
    def in_alternate(self) -> bool:
        return self.main_buffer is not None

    def set_mode(self, *modes: int, **kwargs: object) -> None:
        if kwargs.get("private"):
            for mode in modes:
                if mode in _ALT_MODES:
                    self._enter(mode)
            modes = tuple(m for m in modes if m not in _ALT_MODES)
            if not modes:
                return
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: object) -> None:
        if kwargs.get("private"):
            for mode in modes:
                if mode in _ALT_MODES:
                    self._leave(mode)
            modes = tuple(m for m in modes if m not in _ALT_MODES)
            if not modes:
                return
        super().reset_mode(*modes, **kwargs)

    def _save_cursor_copy(self) -> None:
        cur = self.cursor
        saved = Cursor(cur.x, cur.y, cur.attrs)
        saved.hidden = cur.hidden
        self.alt_saved_cursor = saved

    def _restore_cursor_copy(self) -> None:
        saved = self.alt_saved_cursor
        if saved is not None:
            restored = Cursor(saved.x, saved.y, saved.attrs)
            restored.hidden = saved.hidden
            self.cursor = restored
            self.ensure_hbounds()
            self.ensure_vbounds()

    def _new_buffer(self) -> dict[int, StaticDefaultDict[int, Char]]:
        fresh = type(self.buffer)(self.buffer.default_factory)  # type: ignore[attr-defined]
        return fresh

    def _enter(self, mode: int) -> None:
        if mode == _SAVE_CURSOR:
            self._save_cursor_copy()
            return
        if mode == _ALT_CURSOR:
            self._save_cursor_copy()
        if self.main_buffer is None:
            self.main_buffer = self.buffer
            self.buffer = self._new_buffer()
        elif mode == _ALT_CURSOR:
            self.buffer.clear()
        self.dirty.update(range(self.lines))

    def _leave(self, mode: int) -> None:
        if mode == _SAVE_CURSOR:
            self._restore_cursor_copy()
            return
        if self.main_buffer is not None:
            self.buffer = self.main_buffer
            self.main_buffer = None
            self.dirty.update(range(self.lines))
        if mode == _ALT_CURSOR:
            self._restore_cursor_copy()


class _SafeStream(pyte.Stream):
    """pyte.Stream that drops a sequence its screen cannot handle instead of raising, and
    takes colour changes and line ends without pyte's one-character-at-a-time parser.

    Real programs send sequences pyte does not know (vim's private SGR `CSI > 4;2 m`).
    """

    def _send_to_parser(self, data: str) -> bool | None:
        try:
            return self._parser.send(data)  # type: ignore[union-attr]
        except Exception:
            self._initialize_parser()
            return self._taking_plain_text

    def feed(self, data: str) -> None:
        listener = self.listener
        assert listener is not None
        draw = listener.draw
        match_text = self._text_pattern.match
        match_sgr = _FAST_SGR.match
        send = self._send_to_parser
        taking = self._taking_plain_text
        i, n = 0, len(data)
        while i < n:
            if taking:
                m = match_text(data, i)
                if m:
                    draw(m.group())
                    i = m.end()
                    continue
                ch = data[i]
                if ch == "\n":
                    listener.linefeed()
                    i += 1
                    continue
                if ch == "\r":
                    listener.carriage_return()
                    i += 1
                    continue
                if ch == "\x1b":
                    m = match_sgr(data, i)
                    if m:
                        params = [min(int(p or 0), 9999) for p in m.group(1).split(";")]
                        with contextlib.suppress(Exception):  # pyte raises on bad colours
                            listener.select_graphic_rendition(*params)
                        i = m.end()
                        continue
                taking = False
            else:
                taking = send(data[i])
                i += 1
        self._taking_plain_text = taking


_FAST_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _copy_buffer(buffer: dict) -> dict:
    fresh = type(buffer)(buffer.default_factory)  # type: ignore[attr-defined]
    for y, row in buffer.items():
        if row:
            new_row: StaticDefaultDict[int, Char] = StaticDefaultDict(row.default)
            new_row.update(row)
            fresh[y] = new_row
    return fresh


class TerminalScreen:
    """A cols x rows terminal: feed it the raw bytes a program wrote, read back the screen.

    Handles the alternate screen (DECSET/DECRST 1049, 1047, 47, and 1048 cursor save), so
    leaving vim, less or top brings back the shell screen as it was.

    Args:
        cols: Width in cells.
        rows: Height in cells.
    """

    def __init__(self, cols: int = TERMINAL.cols, rows: int = TERMINAL.rows) -> None:
        self.cols = cols
        self.rows = rows
        self._screen = _AltScreen(cols, rows)
        self._stream = _SafeStream(self._screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._screen.dirty.update(range(rows))

    # -- input -------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Feed raw terminal bytes (UTF-8; a character split across calls is kept whole)."""
        text = self._decoder.decode(data)
        if text:
            self._stream.feed(text)

    def feed_text(self, text: str, skip_scrolled: bool = False) -> None:
        """Feed already decoded terminal output (as stored in an asciicast).

        Args:
            text: The output.
            skip_scrolled: Do not draw stretches of output that provably scroll off the screen
                before the end of `text` (only their colours and modes are applied). The screen
                ends up exactly as with a full feed; much faster on long output.
        """
        if not text:
            return
        if not skip_scrolled:
            self._stream.feed(text)
            return
        if not self._stream._taking_plain_text:  # inside an escape sequence: finish it first
            head = min(len(text), 256)
            self._stream.feed(text[:head])
            text = text[head:]
            if not self._stream._taking_plain_text:
                self._stream.feed(text)
                return
        pos = 0
        autowrap = pyte.modes.DECAWM in self._screen.mode
        for start, stop, kept in scrolled_off_regions(text, self.rows, self.cols, autowrap):
            self._stream.feed(text[pos:start])
            if self._screen.margins is None:
                self._stream.feed(kept)
            else:
                self._stream.feed(text[start:stop])
            pos = stop
        self._stream.feed(text[pos:])

    def reset(self) -> None:
        """Clear everything, as a freshly opened terminal."""
        self._screen.reset()
        self._decoder.reset()
        self._stream = _SafeStream(self._screen)

    # -- output ------------------------------------------------------------------------------

    @property
    def in_alternate_screen(self) -> bool:
        """True while a full-screen program (vim, less, top) holds the alternate screen."""
        return self._screen.in_alternate

    @property
    def cursor(self) -> tuple[int, int]:
        """The cursor position as (column, row), 0-based."""
        return self._screen.cursor.x, self._screen.cursor.y

    @property
    def title(self) -> str:
        """The window title a program set (OSC 0/2), or ""."""
        return self._screen.title

    def lines(self) -> list[str]:
        """Every visible row as text, trailing spaces removed (always `rows` items)."""
        screen = self._screen
        dirty = screen.dirty
        cache = screen.rendered
        if dirty:
            buffer = screen.buffer
            cols = self.cols
            for y in dirty:
                if 0 <= y < self.rows:
                    row = buffer.get(y)
                    if not row:
                        cache[y] = ""
                        continue
                    width = min(max(row) + 1, cols)
                    cache[y] = "".join([row[x].data for x in range(width)]).rstrip()
            dirty.clear()
        return list(cache)

    def text(self) -> str:
        """The visible screen as text: rows joined by newlines, trailing blank rows dropped."""
        return "\n".join(self.lines()).rstrip("\n")

    def cells(self, row: int) -> list[Cell]:
        """The `cols` cells of one row, with their colours and attributes."""
        line = self._screen.buffer.get(row)
        if line is None:
            default = self._screen.default_char
            return [default] * self.cols
        return [line[x] for x in range(self.cols)]

    def styled_lines(self) -> list[list[StyledRun]]:
        """Every visible row as runs of equally styled text (for drawing with colours)."""
        return [list(self._row_runs(y)) for y in range(self.rows)]

    def _row_runs(self, y: int) -> Iterator[StyledRun]:
        line = self._screen.buffer.get(y)
        if not line:
            return
        width = min(max(line) + 1, self.cols)
        key: tuple | None = None
        parts: list[str] = []
        for x in range(width):
            char = line[x]
            if char.data == "":
                continue  # the stub cell after a wide character
            style = char[1:]
            if style != key:
                if parts and key is not None:
                    yield StyledRun("".join(parts), *key)
                key, parts = style, []
            parts.append(char.data)
        if parts and key is not None:
            yield StyledRun("".join(parts), *key)

    # -- checkpoints -------------------------------------------------------------------------

    def snapshot(self) -> ScreenSnapshot:
        """Capture the screen state so `restore` can return to it (used to seek in replays)."""
        s = self._screen
        cursor = Cursor(s.cursor.x, s.cursor.y, s.cursor.attrs)
        cursor.hidden = s.cursor.hidden
        state = {
            "buffer": _copy_buffer(s.buffer),
            "main_buffer": _copy_buffer(s.main_buffer) if s.main_buffer is not None else None,
            "alt_saved_cursor": s.alt_saved_cursor,
            "cursor": cursor,
            "savepoints": list(s.savepoints),
            "mode": set(s.mode),
            "margins": s.margins,
            "title": s.title,
            "icon_name": s.icon_name,
            "charset": s.charset,
            "g0_charset": s.g0_charset,
            "g1_charset": s.g1_charset,
            "tabstops": set(s.tabstops),
        }
        return ScreenSnapshot(state)

    def restore(self, snap: ScreenSnapshot) -> None:
        """Return to a state captured by `snapshot` (the snapshot stays reusable)."""
        s = self._screen
        st = snap.state
        s.buffer = _copy_buffer(st["buffer"])
        main = st["main_buffer"]
        s.main_buffer = _copy_buffer(main) if main is not None else None
        s.alt_saved_cursor = st["alt_saved_cursor"]
        cur = st["cursor"]
        s.cursor = Cursor(cur.x, cur.y, cur.attrs)
        s.cursor.hidden = cur.hidden
        s.savepoints = list(st["savepoints"])
        s.mode = set(st["mode"])
        s.margins = st["margins"] if isinstance(st["margins"], Margins | None) else None
        s.title = st["title"]
        s.icon_name = st["icon_name"]
        s.charset = st["charset"]
        s.g0_charset = st["g0_charset"]
        s.g1_charset = st["g1_charset"]
        s.tabstops = set(st["tabstops"])
        s.dirty.update(range(self.rows))
        self._decoder.reset()
        self._stream = _SafeStream(s)
