"""The Docker engine connection: one cached client, and a clear message when no engine answers."""

from __future__ import annotations

import functools
import os
from typing import Any

from termgym.errors import BackendUnavailable, EngineError

START_DOCKER = (
    "Start a Docker engine (`make system` installs and starts one on Debian as root; "
    "otherwise `sudo systemctl start docker` or open Docker Desktop)"
)
HOW_TO_START_DOCKER = (
    START_DOCKER
    + ", or use the daemon-free bubblewrap backend with backend='bwrap' (install `bubblewrap`)."
)


def engine_address() -> str:
    """Where the Docker engine answers (DOCKER_HOST, else the local socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


@functools.lru_cache(maxsize=8)
def _client_for(address: str, pid: int) -> Any:
    """One client per engine address and process: a forked child never shares its parent's
    connections (their replies would interleave)."""
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # docker raises DockerException, requests errors, FileNotFoundError
        raise BackendUnavailable(
            f"No Docker engine answered at {address} ({type(exc).__name__}: {exc}). "
            + HOW_TO_START_DOCKER
        ) from exc
    return client


def docker_client(needed_for: str = "") -> Any:
    """Return a Docker SDK client whose engine answered a ping.

    `needed_for` names a step only an engine does whatever the backend (building an image,
    exporting one for bwrap): the error then says so, rather than suggest bwrap.

    Raises:
        BackendUnavailable: no engine answers; the message says how to start one.
    """
    try:
        return _client_for(engine_address(), os.getpid())
    except BackendUnavailable as exc:
        if not needed_for:
            raise
        raise BackendUnavailable(
            f"{needed_for} needs a Docker engine, whichever the backend (without one, bwrap "
            f"runs only the base image, made by debootstrap); none answered at "
            f"{engine_address()} ({_why(exc)}). {START_DOCKER}."
        ) from exc


def _why(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {cause}"


def docker_answers() -> bool:
    """True when a Docker engine answers a ping (cheap after the first call)."""
    try:
        docker_client()
    except BackendUnavailable:
        return False
    return True


def engine_away(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) says the engine did not answer: down, restarting,
    or past a call's deadline, rather than refusing what was asked."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, BackendUnavailable | EngineError | ConnectionError):
            return True
        if type(seen).__name__ == "ConnectionError":  # requests', under the Docker SDK
            return True
        if any(said in str(seen) for said in AWAY):  # an episode's end, told as text
            return True
        seen = seen.__cause__ or seen.__context__
    return False


AWAY = ("EngineError:", "BackendUnavailable:", "Connection aborted", "Connection refused",
        "No Docker engine answered")  # fmt: skip
"""How an error that reached the caller as text (an episode's final info) says the engine
did not answer."""


def forget_clients() -> None:
    """Drop cached clients (after DOCKER_HOST changes, or an engine restart)."""
    _client_for.cache_clear()
