"""Host-side deadlines on sandbox starts and on calls into an engine: nothing hangs termgym."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from termgym.errors import EngineError

T = TypeVar("T")

ENGINE_DEADLINE = 60.0
"""Seconds any single engine call (start, kill, copy, inspect, remove) may take."""

START_DEADLINE = 60.0
"""Seconds a bwrap or local sandbox start may take once its root filesystem is ready: its
shell's first answer and its standby's ready line are waited for within it (the shell's
within 30 s at most); a start that overruns raises SandboxStartError and leaves nothing."""


def within(seconds: float, what: str, call: Callable[[], T]) -> T:
    """Run `call` in a worker thread; raise EngineError if it has not returned in `seconds`.

    The call's own exception is re-raised as it is. A call that overruns keeps running in
    its (daemon) thread until the engine answers or the connection drops; the caller acts
    as though it failed (typically by killing the sandbox through the engine).
    """
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"termgym-engine: {what}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise EngineError(f"The engine did not finish {what} within {seconds:g} s.")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
