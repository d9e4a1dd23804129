"""Sandbox backends by name: register_sandbox(), make_sandbox(), default_backend(), Backend.

Backends are classes taking a SandboxConfig. Besides the three bundled ones, installed
packages add backends under the entry-point group "termgym.sandboxes" (name =
"module:Class"); a backend that isolates nothing registers with `isolated=False`, one that
gives an agent's sandbox the model gateway (`SandboxConfig.gateway`) with `gateway=True`. The
names follow the one scheme of every registry (`register_X`, `unregister_X`,
`registered_Xs`, `X_spec`, `make_X`, docs/architecture.md).

A backend option (`termgym.make`'s, `MultiTaskEnv`'s, `termgym run`'s, `rollout`'s, the
adapters') is checked in one place, `Backend.coerce`, once, where it enters; the code below
(the env, the pool, `make_sandbox`) takes the `Backend` it returns and checks it no more.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
import warnings
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from termgym._registry import Entry, Registry
from termgym.errors import BackendUnavailable, SandboxError, UnknownBackend
from termgym.images import HOW_TO_START_DOCKER, docker_answers
from termgym.sandbox._base import Capabilities, Sandbox, SandboxConfig, VerifierSandbox

ENTRY_POINT_GROUP = "termgym.sandboxes"
"""Installed packages add sandbox backends under this entry-point group."""

registry: Registry[Any] = Registry("sandbox backend", ENTRY_POINT_GROUP, UnknownBackend)
SandboxSpec = Entry
"""A registered backend: `name`, `target` ("module:Class" or the class), `options`
({"isolated": bool, "gateway": bool})."""


def register_sandbox(
    name: str, entry_point: str | type, *, isolated: bool = True, gateway: bool = False
) -> Entry[Any]:
    """Register a sandbox backend class under `name` (replacing one of that name).

    `isolated`: it isolates the agent from the host (False: make_sandbox asks for an opt-in).
    `gateway`: it honours `SandboxConfig.gateway` (termgym.sandbox._gateway): the model
    gateway is all an agent's sandbox reaches besides what `network` gives it.
    """
    return registry.register(name, entry_point, options={"isolated": isolated, "gateway": gateway})


register_sandbox("docker", "termgym.sandbox._docker:DockerSandbox", gateway=True)
register_sandbox("bwrap", "termgym.sandbox._bwrap:BwrapSandbox", gateway=True)
register_sandbox("local", "termgym.sandbox._local:LocalSandbox", isolated=False)


def unregister_sandbox(name: str) -> None:
    """Remove a sandbox backend (no error if absent)."""
    registry.unregister(name)


def registered_sandboxes() -> list[str]:
    """Every registered sandbox backend, plugins included, sorted."""
    return registry.names()


def sandbox_spec(name: str) -> Entry[Any]:
    """The entry registered under `name`; UnknownBackend lists the known ones."""
    return registry.entry(name)


def check_gateway(backend: str, wanted: bool) -> None:
    """Refuse the model gateway for a backend that does not declare it, before any sandbox
    starts.

    Raises:
        SandboxError: `wanted` with a backend registered without `gateway=True`.
    """
    if wanted and not sandbox_spec(backend).options.get("gateway", False):
        _refuse_gateway(backend)


def _refuse_gateway(backend: str) -> None:
    able = [n for n in registered_sandboxes() if registry.entry(n).options.get("gateway")]
    raise SandboxError(
        f"The {backend} backend does not give a sandbox the model gateway "
        f"(SandboxConfig.gateway); the backends that do: {', '.join(able) or 'none'}."
    )


def backend_capabilities(name: str) -> Capabilities:
    """What the backend `name` declares it does besides an agent's sandbox (its class's
    `capabilities`), read without starting anything.

    Raises:
        UnknownBackend: no backend of that name (the known ones are listed).
        SandboxError: its class declares no `Capabilities` value.
    """
    target = sandbox_spec(name).target
    declared = getattr(registry.load(name), "capabilities", None)
    if not isinstance(declared, Capabilities):
        raise SandboxError(
            f"The {name} backend ({target}) must declare what it does on its class, as "
            f"`capabilities = Capabilities(...)` (Capabilities() for an agent's sandbox "
            f"only); found {declared!r}."
        )
    return declared


def check_verifier(name: str) -> Capabilities:
    """The capabilities of a backend whose episodes are graded on it, before any verifier
    starts.

    Raises:
        SandboxError: the backend does not declare `Capabilities(verifier=True)`.
    """
    found = backend_capabilities(name)
    if not found.verifier:
        raise SandboxError(_cannot_grade(name, found))
    return found


def as_verifier(sandbox: Sandbox) -> VerifierSandbox:
    """`sandbox` as what grading uses of it, where its class declares
    `Capabilities(verifier=True)`.

    Raises:
        SandboxError: its class declares no verifier (the message lists the backends that do).
    """
    if not sandbox.capabilities.verifier:
        raise SandboxError(_cannot_grade(sandbox.backend, sandbox.capabilities))
    return cast(VerifierSandbox, sandbox)


def _cannot_grade(name: str, found: Capabilities) -> str:
    able = [n for n in registered_sandboxes() if _declares_verifier(n)]
    return (
        f"The {name} backend cannot grade: grading needs a backend that declares "
        f"Capabilities(verifier=True) and implements VerifierSandbox (import_archive, "
        f"network_handle, snapshot_handle, take_standby); {name} declares {found}. "
        f"The backends that grade: {', '.join(able) or 'none'}."
    )


def _declares_verifier(name: str) -> bool:
    try:
        return backend_capabilities(name).verifier
    except Exception:  # noqa: BLE001 - a plugin that fails to load is simply not listed
        return False


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """True when bubblewrap is installed and can make its namespaces here (probed once)."""
    path = shutil.which("bwrap")
    if path is None:
        return False
    probe = [path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"]
    # a loaded machine can take seconds to start a process, and a namespace can fail to be
    # made for a moment (the kernel still tearing down many others): asked again, not
    # taken as an answer at once
    for patience in (15, 60, 180):
        try:
            done = subprocess.run(probe, capture_output=True, timeout=patience, check=False)
        except subprocess.TimeoutExpired:
            continue
        except OSError:
            return False
        if done.returncode == 0:
            return True
        time.sleep(1)
    return False


BACKEND_VARIABLE = "TERMGYM_BACKEND"
"""The environment variable naming the backend used where none is given."""


def default_backend() -> str:
    """The backend used where none is given: $TERMGYM_BACKEND when set, else docker if an
    engine answers, else bwrap if bubblewrap works.

    Raises:
        UnknownBackend: $TERMGYM_BACKEND names no backend (the known ones are listed).
        BackendUnavailable: neither works; the message says how to start Docker.
    """
    chosen = os.environ.get(BACKEND_VARIABLE, "").strip()
    if chosen:
        try:
            return sandbox_spec(chosen).name
        except UnknownBackend as exc:
            raise UnknownBackend(f"${BACKEND_VARIABLE}: {exc}") from None
    if docker_answers():
        return "docker"
    if bwrap_works():
        return "bwrap"
    raise BackendUnavailable(
        "No sandbox backend is available: no Docker engine answers and bubblewrap is "
        "missing or cannot make namespaces here. " + HOW_TO_START_DOCKER
    )


NO_RUNTIME = ("bwrap", "local")
"""Bundled backends that run no container, so take no Docker runtime (runsc)."""


def check_runtime(backend: str, runtime: str | None) -> None:
    """Refuse a Docker runtime for a backend that runs no container, before any sandbox
    starts (each start would fail alike, taken for the machinery's failure and retried).

    Raises:
        SandboxError: `runtime` given with bwrap or local.
    """
    if runtime and backend in NO_RUNTIME:
        raise SandboxError(
            f"The {backend} backend takes no runtime; got runtime={runtime!r} (runtimes such "
            "as runsc are docker's: use the docker backend, or no runtime)."
        )


class Backend(BaseModel):
    """A sandbox backend chosen once, where an option enters: its registered name and what
    its registration declares (`register_sandbox`). Made by `Backend.coerce` only; the code
    below the entry points takes it as it is."""

    model_config = ConfigDict(frozen=True)

    name: str
    isolated: bool = True
    """It isolates the agent from the host (False: `make_sandbox` asks for an opt-in)."""
    gateway: bool = False
    """It gives an agent's sandbox the model gateway (`SandboxConfig.gateway`)."""

    @classmethod
    def coerce(cls, backend: object = None, runtime: object = None) -> Backend:
        """The backend an option names, checked: a `Backend` as it is, a registered name,
        or None for the best available (`default_backend()`); and the Docker runtime asked
        for with it, refused where the backend runs no container.

        Raises:
            ValueError: `backend` is no str, or `runtime` no str.
            UnknownBackend: no backend of that name (the known ones, and a "did you mean").
            BackendUnavailable: None, and no backend works here.
            SandboxError: a runtime for a backend that runs no container (`check_runtime`).
        """
        if runtime is not None and not isinstance(runtime, str):
            raise ValueError(
                f"runtime: expected a Docker runtime name (str, e.g. 'runsc') or None, "
                f"found {runtime!r}"
            )
        if isinstance(backend, Backend):
            chosen = backend
        elif backend is None or isinstance(backend, str):
            name = backend or default_backend()
            entry = sandbox_spec(name)
            chosen = cls(
                name=entry.name,
                isolated=bool(entry.options.get("isolated", True)),
                gateway=bool(entry.options.get("gateway", False)),
            )
        else:
            raise ValueError(f"backend: expected a backend name (str) or None, found {backend!r}")
        check_runtime(chosen.name, runtime)
        return chosen

    def check_gateway(self, wanted: bool) -> None:
        """Refuse the model gateway where this backend does not declare it (`check_gateway`).

        Raises:
            SandboxError: `wanted`, and the backend was registered without `gateway=True`.
        """
        if wanted and not self.gateway:
            _refuse_gateway(self.name)

    def __str__(self) -> str:
        return self.name


def make_sandbox(
    backend: str | Backend | None,
    config: SandboxConfig | None = None,
    *,
    allow_local: bool = False,
) -> Sandbox:
    """Create (not start) a sandbox of `backend`: a `Backend`, a name, or None for
    `default_backend()` (a name or None is checked by `Backend.coerce`).

    The local backend isolates nothing; it needs `allow_local=True` or TERMGYM_ALLOW_LOCAL=1,
    and warns when made.

    Raises:
        UnknownBackend: no backend of that name (the known ones are listed).
        BackendUnavailable: local was asked for without the opt-in, or no backend works.
        SandboxError: `config.gateway` with a backend that does not declare it, or a
            verifier (`config.role`) with a backend that declares none.
    """
    chosen = Backend.coerce(backend)
    name = chosen.name
    chosen.check_gateway(config is not None and config.gateway is not None)
    if config is not None and config.role == "verifier":
        check_verifier(name)
    if not chosen.isolated:
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
    cls = registry.load(name)
    sandbox: Sandbox = cls(config or SandboxConfig())
    return sandbox
