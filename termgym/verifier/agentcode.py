"""Runs inside the verifier: no code of the agent's loads into a root process of the grading.

Injected beside the runner as the module `termgym_agentcode` (stdlib only, Python 3.7+).
A test runs as root and only the programs it starts run as the agent's user
(`termgym_agentexec`); were the test's own process to import, compile or run a file of the
agent's, that code would run as root beside the rules. `guard_agent_code()` (the pytest and
imported-tests kinds, on a clean verifier) refuses every such load from then on;
`watch_agent_code(...)` is the hook under it, which snapshot grading (`termgym_snapshot`)
sets to record what of the agent's its tests load instead, for the verdict's mark. Both see
every load: a finder first on sys.meta_path, and an audit hook (compile, exec, the open of
cached bytecode or an extension module, a library through ctypes).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the runner milliseconds to import: for the checkers only
    from collections.abc import Callable
    from typing import Any

AGENT_UID = int(os.environ.get("TERMGYM_AGENT_UID", "60000"))
"""The agent's user in a verifier (as `termgym_agentexec` reads it)."""

_CODE_FILES = (".pyc", ".pyo", ".so")
"""Opened by an import of compiled code: cached bytecode (whose code object may claim any
co_filename) and extension modules."""


def _compiled_from_source(spec: Any, is_agents: Callable[[Any], bool]) -> None:
    """A module whose source is clean but whose cached bytecode is the agent's (its programs
    cache bytecode, as on its machine) is compiled from the source: its code is not the
    agent's, so the verdict is not marked, and the agent's bytecode never loads."""
    loader = spec.loader
    if type(loader) is not importlib.machinery.SourceFileLoader or not spec.cached:
        return
    if not is_agents(spec.cached) or is_agents(spec.origin):
        return
    agents_bytecode = spec.cached

    class SourceOnly(importlib.machinery.SourceFileLoader):
        def get_data(self, path: str) -> bytes:
            if path == agents_bytecode:
                raise OSError("the agent's bytecode is not loaded")
            return super().get_data(path)

        def set_data(self, path: str, data: Any, *, _mode: int = 0o666) -> None:
            return None

    spec.loader = SourceOnly(loader.name, loader.path)


def watch_agent_code(
    is_agents: Callable[[Any], bool],
    record: str | int | None = None,
    refuse: Callable[[Any], BaseException | None] | None = None,
) -> None:
    """From now on, every file this process loads as code (a module or extension module it
    imports, code it compiles or executes, cached bytecode, a library through ctypes) that
    `is_agents` says is the agent's is refused (`refuse(path)` returns the exception to
    raise) or recorded before the load goes on: written to `record`, a pipe's descriptor
    whose other end a process outside this one reads (what was written there the agent's
    code, once it runs here, cannot take back), or a file's path (appended and flushed:
    for a process that runs nothing of the agent's after). A finder first on
    sys.meta_path and an audit hook (Python 3.8+)."""

    def met(path: Any) -> None:
        if not is_agents(path):
            return
        refusal = refuse(path) if refuse is not None else None
        if refusal is not None:
            raise refusal
        if record is not None and path not in seen:
            seen.add(path)
            line = (str(path).replace("\n", " ") + "\n").encode("utf-8", "replace")
            if isinstance(record, int):
                os.write(record, line)  # one write: a pipe takes it whole (PIPE_BUF)
                return
            fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    seen = set()  # type: set[Any]

    class Finder:
        @classmethod
        def find_spec(cls, name: str, path: Any = None, target: Any = None) -> Any:
            for finder in sys.meta_path:
                if finder is cls or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is None:
                    continue
                met(spec.origin)
                _compiled_from_source(spec, is_agents)
                return spec
            return None

    def audit(event: str, args: Any) -> None:
        path = None
        if event == "compile" and len(args) > 1:
            path = args[1]
        elif event == "exec" and args:
            path = getattr(args[0], "co_filename", None)
        elif event == "open" and args and isinstance(args[0], str):
            path = args[0] if args[0].endswith(_CODE_FILES) else None
        elif event == "ctypes.dlopen" and args:
            path = args[0]
        if path is not None:
            met(path)

    sys.meta_path.insert(0, Finder)
    if hasattr(sys, "addaudithook"):
        sys.addaudithook(audit)


_guarded = [-1]
"""The uid whose files `guard_agent_code` refuses (-1: no guard yet)."""


def _agents(path: Any) -> bool:
    """Whether `path` is a file of the agent's (its work is unpacked owned by its uid)."""
    try:
        return isinstance(path, (str, bytes)) and os.stat(path).st_uid == _guarded[0]
    except (OSError, ValueError):
        return False


class AgentCodeRefused(ImportError):
    """A test tried to run the agent's code inside the test process (as root)."""


def refusal(path: Any, what: str = "ran") -> AgentCodeRefused:
    """The error a test gets that loads a file of the agent's (`what`: how) into its process."""
    return AgentCodeRefused(
        f"the tests {what} {path}, a file of the agent's, inside the test process: termgym "
        "runs no code of the agent's as root (this task's tests must run it as a program, "
        "or be imported as protection agent-user)"
    )


def guard_agent_code(agent_uid: int | None = None) -> None:
    """From now on this process refuses to import, compile or run a file the agent (uid
    `agent_uid`, by default AGENT_UID) owns (`watch_agent_code`): tests run as root, and only
    programs they start run as the agent's user. Idempotent (a prepared runner's fork calls
    it again for its job)."""
    first = _guarded[0] < 0
    _guarded[0] = AGENT_UID if agent_uid is None else agent_uid
    if first:
        watch_agent_code(_agents, refuse=refusal)
