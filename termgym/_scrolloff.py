"""Finding terminal output that provably scrolls off unseen, so a replay can skip drawing it."""

from __future__ import annotations

import bisect
import re

__all__ = ["scrolled_off_regions"]

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


def scrolled_off_regions(
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
