"""Sandbox backends by name: register(), make_sandbox(), default_backend()."""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import shutil
import subprocess
import warnings
from dataclasses import dataclass

from termgym.errors import BackendUnavailable, UnknownBackend
from termgym.sandbox._base import Sandbox, SandboxConfig
from termgym.sandbox._engine import HOW_TO_START_DOCKER, docker_answers


@dataclass(frozen=True)
class BackendSpec:
    """A backend's name and where its class lives ("module:Class", imported on first use)."""

    name: str
    entry_point: str
    isolated: bool = True


registry: dict[str, BackendSpec] = {}


def register(name: str, entry_point: str, *, isolated: bool = True) -> None:
    """Register a sandbox backend class under `name`."""
    registry[name] = BackendSpec(name, entry_point, isolated)


register("docker", "termgym.sandbox._docker:DockerSandbox")
register("bwrap", "termgym.sandbox._bwrap:BwrapSandbox")
register("local", "termgym.sandbox._local:LocalSandbox", isolated=False)


def spec(name: str) -> BackendSpec:
    """The spec registered under `name`; UnknownBackend lists the known ones."""
    try:
        return registry[name]
    except KeyError:
        known = sorted(registry)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownBackend(
            f"Expected a sandbox backend among {', '.join(known)}; got {name!r}.{hint}"
        ) from None


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """True when bubblewrap is installed and can make its namespaces here (probed once)."""
    path = shutil.which("bwrap")
    if path is None:
        return False
    probe = [path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def default_backend() -> str:
    """docker if an engine answers, else bwrap if bubblewrap works.

    Raises:
        BackendUnavailable: neither works; the message says how to start Docker.
    """
    if docker_answers():
        return "docker"
    if bwrap_works():
        return "bwrap"
    raise BackendUnavailable(
        "No sandbox backend is available: no Docker engine answers and bubblewrap is "
        "missing or cannot make namespaces here. " + HOW_TO_START_DOCKER
    )


def make_sandbox(
    backend: str | None, config: SandboxConfig | None = None, *, allow_local: bool = False
) -> Sandbox:
    """Create (not start) a sandbox of `backend` (None: `default_backend()`).

    The local backend isolates nothing; it needs `allow_local=True` or TERMGYM_ALLOW_LOCAL=1,
    and warns when made.

    Raises:
        UnknownBackend: no backend of that name (the known ones are listed).
        BackendUnavailable: local was asked for without the opt-in, or no backend works.
    """
    name = backend or default_backend()
    found = spec(name)
    if not found.isolated:
        if not (allow_local or os.environ.get("TERMGYM_ALLOW_LOCAL") == "1"):
            raise BackendUnavailable(
                f"The {name!r} backend runs commands on this machine with no isolation; "
                "pass allow_local=True or set TERMGYM_ALLOW_LOCAL=1 to use it."
            )
        warnings.warn(
            f"Sandbox backend {name!r} isolates nothing: the agent's commands run on this "
            "machine as this user.",
            RuntimeWarning,
            stacklevel=2,
        )
    module_name, _, attr = found.entry_point.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    sandbox: Sandbox = cls(config or SandboxConfig())
    return sandbox
