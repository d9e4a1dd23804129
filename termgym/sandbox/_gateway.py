"""How an agent's sandbox reaches the model gateway: its socket bound in, a relay in front.

A sandbox whose config names a `GatewayMount` keeps its network as it was (off unless the
task asks: a loopback of its own and nothing else) and gets two files, bound read-only
under /dev/termgym (a /dev of the sandbox's own, so neither is in the agent's files, its
exports or its snapshot):

- `gateway.sock`, the gateway's unix socket on the host: a unix socket is reached by its
  path, whatever the network namespace, so this is the one way out;
- `relay`, a static program (`gateway_relay.c`) that every agent process termgym starts in
  the sandbox (the shell, each exec) starts behind: it listens on 127.0.0.1:<port> in the
  process's network namespace, where none listens yet, and relays each connection to the
  socket, then runs the process (`relayed`).

On docker every process shares the container's network namespace: the first shell's
relay serves them all. On bwrap the shell and each exec have a namespace of their own:
each gets its relay, which ends with it. The relay holds no secret: the gateway checks
each request's token, and the key to the model's endpoint never leaves the host.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from termgym.errors import SandboxStartError
from termgym.sandbox._base import GatewayMount, SandboxConfig
from termgym.sandbox._static import static_program

SANDBOX_DIR = "/dev/termgym"
SOCKET = f"{SANDBOX_DIR}/gateway.sock"
"""The gateway's socket, inside the sandbox."""
RELAY = f"{SANDBOX_DIR}/relay"
"""The relay program, inside the sandbox."""

_SOURCE = Path(__file__).with_name("gateway_relay.c")


def wanted(config: SandboxConfig) -> GatewayMount | None:
    """The config's gateway, where it applies: an agent's sandbox (a verifier never gets one)."""
    return config.gateway if config.role == "agent" else None


def relay_program() -> Path:
    """The relay, built for this host (once).

    Raises:
        SandboxStartError: no C compiler here to build it with.
    """
    built = static_program(_SOURCE, "gateway-relay")
    if built is None:
        raise SandboxStartError(
            "Expected a C compiler (musl-gcc, cc or gcc) to build the model gateway's relay "
            "(termgym/sandbox/gateway_relay.c); found none that builds it. Install one "
            "(`apt-get install musl-tools`, or `make system`)."
        )
    return built


def binds(mount: GatewayMount) -> list[tuple[str, str]]:
    """(host path, sandbox path) of the files a sandbox with `mount` gets, read-only.

    Raises:
        SandboxStartError: the gateway's socket is not there (a closed gateway) or the
            relay cannot be built.
    """
    try:
        mode = os.stat(mount.socket).st_mode
    except OSError:
        mode = 0
    if not stat.S_ISSOCK(mode):
        raise SandboxStartError(
            f"Expected the model gateway's unix socket at {mount.socket}; found "
            f"{'something else' if mode else 'nothing'} (was the gateway closed, or made on "
            "another machine?)."
        )
    return [(mount.socket, SOCKET), (str(relay_program()), RELAY)]


def relayed(argv: Sequence[str], mount: GatewayMount | None) -> list[str]:
    """`argv` started behind the relay (as is, without a gateway)."""
    if mount is None:
        return list(argv)
    return [RELAY, str(mount.port), SOCKET, "--", *argv]
