"""A terminal screen emulator over pyte that keeps the alternate screen of vim, less and top."""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyte
from pyte.charsets import LAT1_MAP as _LAT1
from pyte.screens import Char, Cursor, Margins, StaticDefaultDict

__all__ = ["Cell", "ScreenSnapshot", "StyledRun", "TerminalScreen"]

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
            super().draw(data)
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
            for ch in chunk:
                glyph = glyphs.get(ch)
                if glyph is None:
                    glyph = glyphs[ch] = attrs._replace(data=ch)
                line[x] = glyph
                x += 1
            cursor.x = x
            i += len(chunk)
        self.dirty.add(cursor.y)

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
    """pyte.Stream that drops a sequence its screen cannot handle instead of raising.

    Real programs send sequences pyte does not know (vim's private SGR `CSI > 4;2 m`).
    """

    def _send_to_parser(self, data: str) -> bool | None:
        try:
            return self._parser.send(data)  # type: ignore[union-attr]
        except Exception:
            self._initialize_parser()
            return self._taking_plain_text


# Escape sequences, sorted by what skipping output across them would risk (see
# _scrolled_off_regions): KEEP only sets colours or modes (applied even when skipped); INLINE
# changes cells of the cursor row or clears; ROWMOVE moves the cursor between rows; UNSAFE
# changes state a later sequence depends on (margins, saved cursor, buffers, charsets, reset).
_KEEP, _INLINE, _ROWMOVE, _UNSAFE = range(4)
_TOKEN = re.compile(
    r"\x1b\[([?>=]?)([0-9;:]*)([@-~])"  # CSI
    r"|\x1b\][^\x07\x1b\n\r]*(?:\x07|\x1b\\)"  # OSC (title), on one line
    r"|(?:\x1b\[|\x9b)[^@-~]*[@-~]?"  # any other CSI, up to its final byte
    r"|(?:\x1b\]|\x9d)[^\x07\x1b]*(?:\x07|\x1b\\)?"  # any other OSC, up to its end
    r"|\x1b[()*+#%][\s\S]?"  # charset designations and ESC # n, with their argument
    r"|\x1b[^\[\]]?"  # other escapes, or a bare ESC
    r"|[\x0e\x0f\x90\x98\x9e\x9f]"  # shift in/out, other C1 controls
)
_UNSAFE_PRIVATE_MODES = frozenset({"3", "5", "6", "7", "47", "1047", "1048", "1049"})
_PRIVATE_MODE = re.compile(r"\x1b\[\?([0-9;]*)([hl])")
_MODE = re.compile(r"\x1b\[([?]?)([0-9;]*)([hl])")
_LEADS = "\x1b\x0e\x0f\x90\x98\x9b\x9d\x9e\x9f"
_ASCII_RUN = re.compile(r"[ -~]+")
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_NOT_SGR = re.compile(r"\x1b(?!\[[0-9;:]*m)")
_SGR_RESETS = ("\x1b[0m", "\x1b[m")


def _one_line(token: str) -> bool:
    return "\n" not in token and "\r" not in token


def _classify(match: re.Match[str]) -> int:
    final = match.group(3)
    if final is not None:
        prefix, params = match.group(1), match.group(2)
        if prefix == "":
            if final in "mhl":
                return _KEEP
            if final in "CDGKXPJ@`a":
                return _INLINE
            if final in "ABEFHfdeLMST":
                return _ROWMOVE
            return _UNSAFE
        if prefix == "?":
            if final in "hl":
                modes = set(params.split(";"))
                return _UNSAFE if modes & _UNSAFE_PRIVATE_MODES else _KEEP
            return _INLINE if final in "JK" else _UNSAFE
        return _KEEP
    token = match.group(0)
    if token.startswith("\x1b]") and token.endswith(("\x07", "\x1b\\")) and _one_line(token):
        return _KEEP
    if token in ("\x1bD", "\x1bE"):
        return _INLINE
    if token == "\x1bM":
        return _ROWMOVE
    if token in ("\x1b=", "\x1b>"):
        return _KEEP
    return _UNSAFE


def _tokens(text: str) -> list[re.Match[str]]:
    """Every escape sequence but SGR (colours), and every shift / C1 control, in order."""
    starts = [m.start() for m in _NOT_SGR.finditer(text)]
    leads = "\x0e\x0f" if text.isascii() else _LEADS[1:]
    for lead in leads:
        find = text.find
        i = find(lead)
        while i >= 0:
            starts.append(i)
            i = find(lead, i + 1)
    starts.sort()
    matches: list[re.Match[str]] = []
    end = 0
    match = _TOKEN.match
    for i in starts:
        if i < end:
            continue  # inside the previous sequence
        m = match(text, i)
        if m is not None:
            matches.append(m)
            end = m.end()
    return matches


def _kept(text: str, start: int, stop: int, tokens: list[tuple[int, int, int, str]]) -> str:
    """The sequences of text[start:stop] whose effect outlives it: last mode settings, last
    titles, and the colour changes since the last colour reset (`tokens`: its non-SGR ones)."""
    modes: dict[tuple[str, str], str] = {}
    others: dict[str, str] = {}
    for _, _, kind, token in tokens:
        if kind != _KEEP:
            continue
        mode = _MODE.fullmatch(token)
        if mode:
            for param in mode.group(2).split(";"):
                modes[(mode.group(1), param)] = mode.group(3)
        else:
            others[token.split(";", 1)[0] if token.startswith("\x1b]") else token[:2]] = token
    reset = max(text.rfind(r, start, stop) for r in _SGR_RESETS)
    colours = [m.group(0) for m in _SGR.finditer(text, max(reset, start), stop)]
    moded = [f"\x1b[{prefix}{param}{final}" for (prefix, param), final in modes.items()]
    return "".join(moded) + "".join(others.values()) + "".join(colours)


def _wraps(segment: str, cols: int) -> int:
    """A lower bound of the line wraps drawing `segment` (no line feed in it) causes."""
    plain = _TOKEN.sub(lambda m: "" if _classify(m) == _KEEP else "\x00", segment)
    return sum((len(run) - 1) // cols for run in _ASCII_RUN.findall(plain))


def _window_start(text: str, g0: int, g1: int, need: int, cols: int, autowrap: bool) -> int:
    """Start (a carriage return) of the last window in text[g0:g1] advancing `need` rows; or -1."""
    advanced, q = 0, g1
    while advanced < need:
        nl = text.rfind("\n", g0, q)
        if nl < 0:
            return -1
        advanced += 1 + (_wraps(text[nl + 1 : q], cols) if autowrap else 0)
        q = nl
    return text.rfind("\r", g0, q + 1)


def _scrolled_off_regions(
    text: str, rows: int, cols: int = 0, autowrap: bool = False, min_size: int = 4096
) -> list[tuple[int, int, str]]:
    """Stretches of `text` whose drawing is wiped out by what follows, with what to keep of them.

    A stretch qualifies when it holds no UNSAFE sequence and is followed by a window that starts
    at a carriage return and advances the cursor 2 x rows rows (line feeds, plus the wraps of
    long runs of ASCII when `autowrap` is on) with only KEEP or INLINE sequences: whatever row
    the cursor starts the window on, every row on screen then scrolls off, so the stretch only
    matters through its colour and mode changes (the caller also requires no margins).
    `autowrap` is the DECAWM state where `text` starts. Returns (start, stop, kept) in order.
    """
    need = 2 * rows
    tokens = [(m.start(), m.end(), _classify(m), m.group(0)) for m in _tokens(text)]
    starts = [t[0] for t in tokens]
    barriers = [i for i, t in enumerate(tokens) if t[2] >= _ROWMOVE]
    # For each barrier: the last UNSAFE barrier at or before it, and DECAWM right after it.
    last_unsafe: list[int] = []
    wrap_after: list[bool] = []
    unsafe, wrap = -1, autowrap
    for b, i in enumerate(barriers):
        token, kind = tokens[i][3], tokens[i][2]
        if kind == _UNSAFE:
            unsafe = b
            mode = _PRIVATE_MODE.fullmatch(token)
            if mode and "7" in mode.group(1).split(";"):
                wrap = mode.group(2) == "h"
            elif token == "\x1bc":
                wrap = True
        last_unsafe.append(unsafe)
        wrap_after.append(wrap)
    regions: list[tuple[int, int, str]] = []
    hi = len(text)
    k = len(barriers)
    while k >= 0:
        g0 = tokens[barriers[k - 1]][1] if k > 0 else 0
        g1 = min(tokens[barriers[k]][0] if k < len(barriers) else len(text), hi)
        k -= 1
        if g1 - g0 < min_size:
            continue
        j = last_unsafe[k] if k >= 0 else -1
        wrap = wrap_after[k] if k >= 0 else autowrap
        window = _window_start(text, g0, g1, need, cols, wrap and cols > 0)
        if window < 0:
            continue
        start = tokens[barriers[j]][1] if j >= 0 else 0
        if window - start >= min_size:
            lo, up = bisect.bisect_left(starts, start), bisect.bisect_left(starts, window)
            regions.append((start, window, _kept(text, start, window, tokens[lo:up])))
            hi = start
            k = j
    regions.reverse()
    return regions


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

    def __init__(self, cols: int = 120, rows: int = 40) -> None:
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
        for start, stop, kept in _scrolled_off_regions(text, self.rows, self.cols, autowrap):
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
