"""TerminalScreen: text, colours, the alternate screen, snapshots, and real full-screen programs."""

from __future__ import annotations

import io
import os
import shutil
import subprocess

import pexpect
import pytest

from termgym._scrolloff import scrolled_off_regions
from termgym.screen import TerminalScreen


def test_text_shows_what_was_printed_with_trailing_blanks_dropped() -> None:
    screen = TerminalScreen(40, 10)
    screen.feed(b"hello\r\nworld   \r\n$ ")
    assert screen.text() == "hello\nworld\n$"
    assert screen.lines()[:3] == ["hello", "world", "$"]
    assert len(screen.lines()) == 10
    assert screen.cursor == (2, 2)


def test_utf8_split_across_feeds_is_kept_whole() -> None:
    screen = TerminalScreen(40, 5)
    data = "café 日本".encode()
    screen.feed(data[:4])
    screen.feed(data[4:])
    assert screen.text() == "café 日本"


def test_wide_characters_keep_their_place_in_styled_runs() -> None:
    screen = TerminalScreen(20, 3)
    screen.feed("日本x".encode())
    assert "".join(run.text for run in screen.styled_lines()[0]) == "日本x"


def test_colours_and_attributes_are_kept() -> None:
    screen = TerminalScreen(40, 5)
    screen.feed(b"plain \x1b[1;31mbold red\x1b[0m \x1b[38;5;208mx\x1b[48;2;1;2;3my\x1b[0m")
    runs = screen.styled_lines()[0]
    by_text = {run.text: run for run in runs}
    assert by_text["bold red"].fg == "red" and by_text["bold red"].bold
    assert by_text["plain "].fg == "default" and not by_text["plain "].bold
    assert by_text["x"].fg == "ff8700"
    assert by_text["y"].bg == "010203"
    assert screen.cells(0)[6].fg == "red"


def test_alternate_screen_1049_restores_the_shell_screen_and_cursor() -> None:
    screen = TerminalScreen(40, 10)
    screen.feed(b"$ ls\r\nfile1 file2\r\n$ vim")
    before_text, before_cursor = screen.text(), screen.cursor
    screen.feed(b"\x1b[?1049h\x1b[H\x1b[2J~\r\n~\r\n\x1b[10;1H-- INSERT --")
    assert screen.in_alternate_screen
    assert screen.text().startswith("~\n~")
    assert "file1" not in screen.text()
    screen.feed(b"\x1b[?1049l")
    assert not screen.in_alternate_screen
    assert screen.text() == before_text
    assert screen.cursor == before_cursor


def test_alternate_screen_1049_starts_clear_each_time() -> None:
    screen = TerminalScreen(20, 5)
    screen.feed(b"\x1b[?1049hleftover\x1b[?1049l")
    screen.feed(b"\x1b[?1049h")
    assert screen.text() == ""


@pytest.mark.parametrize("mode", [47, 1047])
def test_alternate_screen_modes_47_and_1047_switch_buffers(mode: int) -> None:
    screen = TerminalScreen(20, 5)
    screen.feed(b"main text")
    screen.feed(b"\x1b[?%dh\x1b[Halt text" % mode)
    assert screen.in_alternate_screen
    assert "alt text" in screen.text() and "main" not in screen.text()
    screen.feed(b"\x1b[?%dl" % mode)
    assert screen.text() == "main text"


def test_leaving_an_alternate_screen_never_entered_changes_nothing() -> None:
    screen = TerminalScreen(20, 5)
    screen.feed(b"still here\x1b[?1049l\x1b[?47l")
    assert screen.text() == "still here"
    assert not screen.in_alternate_screen


def test_other_private_modes_still_work_next_to_the_alternate_screen() -> None:
    screen = TerminalScreen(20, 5)
    screen.feed(b"\x1b[?25;1049h")
    assert screen.in_alternate_screen
    screen.feed(b"\x1b[?25l")
    assert screen._screen.cursor.hidden


def test_real_tput_smcup_and_rmcup_bytes_switch_and_restore() -> None:
    if shutil.which("tput") is None:
        pytest.skip("tput is not installed")
    env = {**os.environ, "TERM": "xterm"}
    smcup = subprocess.run(["tput", "smcup"], env=env, capture_output=True, check=True).stdout
    rmcup = subprocess.run(["tput", "rmcup"], env=env, capture_output=True, check=True).stdout
    assert smcup, "tput printed nothing for smcup"
    screen = TerminalScreen(40, 10)
    screen.feed(b"prompt$ ")
    screen.feed(smcup + b"\x1b[Hfull screen app")
    assert screen.in_alternate_screen and "prompt" not in screen.text()
    screen.feed(rmcup)
    assert screen.text() == "prompt$"


@pytest.mark.parametrize("program", ["less", "vim"])
def test_real_full_screen_program_leaves_the_shell_screen_as_it_was(program: str, tmp_path) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed on this machine")
    target = tmp_path / "notes.txt"
    target.write_text("".join(f"note line {i}\n" for i in range(100)))
    argv = {"less": ["less", str(target)], "vim": ["vim", "-u", "NONE", "-N", str(target)]}
    drawn = {"less": "notes.txt", "vim": "note line 22"}  # the prompt line; the last line
    script = f"printf 'before the program\\r\\n'; {' '.join(argv[program])}; printf 'after\\r\\n'"
    log = io.BytesIO()
    child = pexpect.spawn(
        "sh",
        ["-c", script],
        env={"TERM": "xterm", "PATH": os.environ["PATH"]},
        dimensions=(24, 80),
        timeout=60,
    )
    child.logfile_read = log
    child.expect(drawn[program])  # what each draws last on its first screen
    inside = log.getvalue()
    child.send(":q\r" if program == "vim" else "q")
    child.expect(pexpect.EOF)
    child.close()
    screen = TerminalScreen(80, 24)
    screen.feed(inside)
    assert screen.in_alternate_screen
    assert "note line 10" in screen.text()
    assert "before the program" not in screen.text()
    screen.feed(log.getvalue()[len(inside) :])
    assert not screen.in_alternate_screen
    assert "note line" not in screen.text()
    assert screen.lines()[0] == "before the program"
    assert "after" in screen.text()


def test_snapshot_and_restore_return_to_the_exact_screen() -> None:
    screen = TerminalScreen(30, 6)
    screen.feed(b"one\r\n\x1b[32mtwo\x1b[0m\r\n\x1b[?1049hALT")
    snap = screen.snapshot()
    text, runs, cursor = screen.text(), screen.styled_lines(), screen.cursor
    screen.feed(b"\x1b[2J\x1b[?1049lmore\r\nand more")
    assert screen.text() != text
    screen.restore(snap)
    assert (screen.text(), screen.styled_lines(), screen.cursor) == (text, runs, cursor)
    screen.feed(b"\x1b[?1049l")
    assert screen.text() == "one\ntwo"
    screen.restore(snap)  # a snapshot can be used twice
    assert screen.text() == text


def test_cached_lines_match_a_full_render_under_random_sequences() -> None:
    import random

    pieces = [
        b"line\r\n",
        b"\x1b[2J",
        b"\x1b[H",
        b"\x1b[5;3H",
        b"xyz",
        b"\x1b[K",
        b"\x1b[1M",
        b"\x1b[2L",
        b"\x1bM",
        b"\x1b[?1049h",
        b"\x1b[?1049l",
        b"\x1b[?47h",
        b"\x1b[3P",
        b"\x1b[4@",
        b"\x1b[2;4r",
        b"\x1b[r",
        b"\n\n\n",
        "日本語".encode(),
        b"\x1b[1J",
        b"\x1bc",
        b"\x1b[3X",
        b"\x1b[S",
        b"\x1b[T",
    ]
    rng = random.Random(7)
    for _ in range(100):
        screen = TerminalScreen(12, 5)
        for _ in range(40):
            screen.feed(rng.choice(pieces))
            cached = screen.lines()
            screen._screen.dirty.update(range(5))
            assert screen.lines() == cached


def test_sequences_pyte_does_not_know_are_dropped_not_raised() -> None:
    screen = TerminalScreen(30, 3)
    screen.feed(b"a\x1b[>4;2mb\x1b[?4mcd\x1b]0;title\x07e")
    assert screen.text() == "abcde"


_PIECES = [
    "plain output line\r\n",
    "\x1b[31mred\x1b[0m text\r\n",
    "x" * 37 + "\r\n",
    "\r\n",
    "\n",
    "ab\rcd",
    "\x1b[2J",
    "\x1b[H",
    "\x1b[3;4H",
    "\x1b[K",
    "\x1b[2A",
    "\x1b[1M",
    "\x1b[2L",
    "\x1bM",
    "\x1b[?1049h",
    "\x1b[?1049l",
    "\x1b[2;4r",
    "\x1b[r",
    "\x1b7",
    "\x1b8",
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b]0;title\x07",
    "\x1b]0;t\r\nx\x07",
    "日本語",
    "\t",
    "\b",
    "\x1b[4h",
    "\x1b[4l",
    "\x1b[?7l",
    "\x1b[?7h",
    "\x1b[?7;25l",
    "\x1b[?25;7h",
    "\x1b(0",
    "\x1b(B",
    "\x0e",
    "\x0f",
    "\x1b[1;32;44m",
    "\x1b[38:5:2m",
    "\x1b[?2004h",
    "\x1bc",
    "\x1b[5S",
    "\x1b[3X",
    "\x1b[2P",
    "\x1b[1@",
    "\x1b[J",
    "\x1b[1J",
    "\x1bD",
    "\x1bE",
    "\x9b2J",
    "\x1b[1\r;2H",
]
_WEIGHTS = [40, 20, 20, 20, 10, 3] + [1] * (len(_PIECES) - 6)


def _state(screen: TerminalScreen) -> tuple:
    inner = screen._screen
    return (
        screen.lines(),
        screen.styled_lines(),
        screen.cursor,
        screen.in_alternate_screen,
        inner.mode,
        inner.cursor.attrs,
        inner.cursor.hidden,
    )


def test_skipping_output_that_scrolls_off_gives_exactly_the_full_replay() -> None:
    import random

    rng = random.Random(11)
    skipped = 0
    for _ in range(120):
        text = "".join(rng.choices(_PIECES, _WEIGHTS, k=rng.choice([50, 300, 700])))
        full, fast = TerminalScreen(15, 6), TerminalScreen(15, 6)
        full.feed_text(text)
        pos = 0
        for start, stop, kept in scrolled_off_regions(text, 6, 15, True, 10):
            fast._stream.feed(text[pos:start])
            fast._stream.feed(kept if fast._screen.margins is None else text[start:stop])
            pos, skipped = stop, skipped + stop - start
        fast._stream.feed(text[pos:])
        assert _state(fast) == _state(full), repr(text)
    assert skipped > 20_000  # the test did exercise skipping


def test_feed_text_with_skipping_matches_a_full_feed_on_long_output() -> None:
    lines = "".join(
        f"\x1b[3{i % 8}mline {i} " + "y" * (i % 300) + "\x1b[0m\r\n" for i in range(3000)
    )
    text = "$ ls\r\n" + lines + "\x1b]0;title\x07$ \x1b[?1049h\x1b[Hin vim" + lines[:20000]
    full, fast = TerminalScreen(), TerminalScreen()
    full.feed_text(text)
    fast.feed_text(text, skip_scrolled=True)
    assert _state(fast) == _state(full)
    assert fast.title == "title"


def test_fast_drawing_and_scrolling_match_pyte_cell_for_cell() -> None:
    import random

    import pyte

    import termgym.screen as screen_module

    class PyteOnly(screen_module._AltScreen):
        def draw(self, data: str) -> None:
            pyte.Screen.draw(self, data)

        def index(self) -> None:
            pyte.Screen.index(self)

    pieces = [
        "hello world ",
        "x" * 50,
        "\r\n",
        "\n",
        "日本",
        "e\u0301",
        "\x1b[4h",
        "\x1b[4l",
        "\x1b[?7l",
        "\x1b[?7h",
        "\x1b(0",
        "\x1b(B",
        "\x0e",
        "\x0f",
        "\x1b[31m",
        "\x1b[0m",
        "\x1b[5;70H",
        "\x1b[2J",
        "abc",
        "\t",
        "\b",
        "\x1b[?1049h",
        "\x1b[?1049l",
        "~~~",
        "\x1b[1;80H",
        "\x1b[3;8r",
        "\x1b[r",
        "\x1bM",
        "\x1b[2S",
        "\n\n\n\n\n",
    ]
    rng = random.Random(5)

    def cells(screen: screen_module._AltScreen) -> dict:
        return {(y, x): c for y, row in screen.buffer.items() for x, c in row.items()}

    for _ in range(300):
        fast, slow = screen_module._AltScreen(80, 10), PyteOnly(80, 10)
        fast_stream, slow_stream = screen_module._SafeStream(fast), screen_module._SafeStream(slow)
        for _ in range(60):
            piece = rng.choice(pieces)
            fast_stream.feed(piece)
            slow_stream.feed(piece)
        assert cells(fast) == cells(slow)
        assert (fast.cursor.x, fast.cursor.y, fast.mode) == (
            slow.cursor.x,
            slow.cursor.y,
            slow.mode,
        )


def test_fast_colour_and_line_end_parsing_matches_pyte_whatever_the_chunking() -> None:
    import random

    import pyte

    import termgym.screen as screen_module

    class PyteStream(screen_module._SafeStream):
        def feed(self, data: str) -> None:
            pyte.Stream.feed(self, data)

    pieces = [
        "hello ",
        "\r\n",
        "\n",
        "\r",
        "\x1b[31m",
        "\x1b[0m",
        "\x1b[m",
        "\x1b[1;32;44m",
        "\x1b[38;5;208m",
        "\x1b[38;5m",
        "\x1b[38;2;1;2m",
        "\x1b[;1m",
        "\x1b[99999m",
        "\x1b[",
        "m",
        "31",
        ";",
        "\x1b",
        "[?25l",
        "\x1b[?1049h",
        "日本",
        "\t",
        "\b",
        "\x1b]0;t\x07",
        "\x1b[2J",
        "\x1b[5;3H",
        "\x0b",
        "\x00",
        "\x9b31m",
        "\x1b[>4;2m",
        "x" * 30,
        "\x1b(0",
        "q",
        "\x1b(B",
    ]
    rng = random.Random(3)
    for _ in range(500):
        fast, slow = screen_module._AltScreen(40, 8), screen_module._AltScreen(40, 8)
        fast_stream, slow_stream = screen_module._SafeStream(fast), PyteStream(slow)
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 80)))
        pos = 0
        while pos < len(text):  # split anywhere, even inside a sequence
            step = rng.randint(1, 20)
            fast_stream.feed(text[pos : pos + step])
            pos += step
        slow_stream.feed(text)
        for screen in (fast, slow):
            screen.dirty.update(range(8))
        state = [
            (
                {(y, x): c for y, r in s.buffer.items() for x, c in r.items()},
                s.cursor.x,
                s.cursor.y,
                s.cursor.attrs,
                s.mode,
                s.title,
            )
            for s in (fast, slow)
        ]
        assert state[0] == state[1], repr(text)
