"""Zero-width characters on the emulated screen: a joiner or zero-width space keeps the rest
of its line, combining marks stay with their cell, and a cell holds at most three code
points, so the screen's text stays within the observation space."""

from __future__ import annotations

import pytest

from termgym.screen import MAX_CELL_CHARS, TerminalScreen, screen_chars


@pytest.mark.parametrize("mark", ["\u200b", "\u200d", "\u2060", "\ufeff", "\u200c"])
def test_a_zero_width_character_mid_line_keeps_the_rest_of_the_line(mark) -> None:
    screen = TerminalScreen(40, 5)
    screen.feed(f"abc{mark}def ghi\r\nnext".encode())
    assert screen.lines()[0] == f"abc{mark}def ghi"
    assert screen.lines()[1] == "next"
    assert screen.cursor == (4, 1)  # the zero-width character took no cell


def test_combining_marks_join_their_character_and_are_capped_per_cell() -> None:
    screen = TerminalScreen(20, 3)
    screen.feed(("e\u0301" + "a" + "\u0301" * 8 + "中\u0301!").encode())
    row = screen.cells(0)
    assert row[0].data == "é"  # composed (NFC), as pyte does
    assert len(row[1].data) == MAX_CELL_CHARS and row[1].data.startswith("á")
    assert row[2].data == "中\u0301" and row[3].data == "" and row[4].data == "!"


def test_a_screen_full_of_marks_stays_within_its_bound() -> None:
    screen = TerminalScreen(120, 40)
    screen.feed(("x" + "\u0301\u0302\u0303\u200d" * 5).encode() * 6000)
    assert len(screen.text()) <= screen_chars(120, 40)
    assert screen_chars(120, 40) == 40 * 120 * MAX_CELL_CHARS + 39
