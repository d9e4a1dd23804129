"""The relay's program itself: it builds warning-free with every compiler the host has, says
what it expects, and runs its program whether or not the port was free."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from termgym.sandbox import GatewayMount, SandboxConfig
from termgym.sandbox._gateway import RELAY, SOCKET, relayed, wanted
from tests.conftest import built_by_every_compiler

SOURCE = Path(__file__).parents[2] / "termgym" / "sandbox" / "gateway_relay.c"


def test_the_relay_builds_with_every_compiler_and_says_what_it_expects(tmp_path: Path) -> None:
    for program in built_by_every_compiler(SOURCE, tmp_path).values():
        usage = subprocess.run([str(program), "80"], capture_output=True, timeout=10)
        assert usage.returncode == 2 and b"usage:" in usage.stderr
        wrong = subprocess.run(
            [str(program), "0", "/s", "--", "true"], capture_output=True, timeout=10
        )
        assert wrong.returncode == 2 and b"expected a port" in wrong.stderr
        with socket.create_server(("127.0.0.1", 0)) as taken:  # no relay is started: the port
            port = str(taken.getsockname()[1])  # is someone's; the program runs all the same
            ran = subprocess.run(
                [str(program), port, "/s", "--", "echo", "ran"], capture_output=True, timeout=10
            )
            assert (ran.returncode, ran.stdout) == (0, b"ran\n")
            alone = subprocess.run([str(program), port, "/s"], capture_output=True, timeout=10)
            assert alone.returncode == 1  # nothing to run, and no relay started


def test_only_an_agents_sandbox_starts_its_processes_behind_the_relay() -> None:
    mount = GatewayMount("/run/gateway.sock", 4000)
    assert relayed(["bash", "-i"], mount) == [RELAY, "4000", SOCKET, "--", "bash", "-i"]
    assert relayed(["bash", "-i"], None) == ["bash", "-i"]
    assert wanted(SandboxConfig(gateway=mount)) == mount
    assert wanted(SandboxConfig(gateway=mount, role="verifier")) is None
