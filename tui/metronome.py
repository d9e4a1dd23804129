"""What paces the episode view's playback: a Textual timer, or a beat a test gives by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.message_pump import MessagePump
from textual.timer import Timer


class Metronome(Protocol):
    """Calls `tick` every `interval` seconds from `start` until `stop`."""

    def start(self, interval: float, tick: Callable[[], object]) -> None:
        """Beat from now on, replacing any beat before (ticks missed meanwhile never come)."""

    def stop(self) -> None:
        """Stop beating; nothing happens when it is not beating."""


class TimerMetronome:
    """Beats with a Textual interval timer of `owner`, so it ends with the owner."""

    def __init__(self, owner: MessagePump) -> None:
        self.owner = owner
        self._timer: Timer | None = None

    def start(self, interval: float, tick: Callable[[], object]) -> None:
        self.stop()
        self._timer = self.owner.set_interval(interval, tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
