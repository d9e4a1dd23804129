"""Messages the TUI's widgets post, as small dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.message import Message


@dataclass
class EpisodeChosen(Message):
    """The user opened an episode from the run view."""

    path: Path


@dataclass
class CompareChosen(Message):
    """The user asked to compare two episodes (the marked one first)."""

    left: Path
    right: Path


@dataclass
class StepHighlighted(Message):
    """The step cursor moved to a step (a position in the episode's step list)."""

    position: int


@dataclass
class ScreenReady(Message):
    """The screen after a step was replayed (in a worker): its coloured rows, or None and a
    note saying why only the recorded text can be shown."""

    position: int
    lines: list | None
    note: str = ""


@dataclass
class DisclosureReady(Message):
    """The run's disclosure split was computed (in a worker): the text to show."""

    text: Text
