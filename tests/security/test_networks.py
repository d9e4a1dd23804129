"""A networked sandbox reaches the internet, never the host: neither its loopback nor its addresses.

Servers on the host, one bound to 127.0.0.1 and one to every address, count the requests
they get; a sandbox with a network (`limits.network: true`) tries each of the host's
addresses it could know (its gateway, the host's own interfaces, slirp4netns's way to the
host's loopback), and neither server may see a request. The same sandbox resolves
deb.debian.org and runs `apt-get update` against Debian's mirror. On both backends; the
live-state verifier still joins a networked agent sandbox's network.
"""

from __future__ import annotations

import dataclasses
import http.server
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import termgym
from termgym.sandbox import DOCKER_DEFAULT_CAPS, SandboxConfig, make_sandbox
from termgym.tasks import load_task

LIVE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "live-service"


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Counting.hits.append(self.client_address[0])
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"host-service")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def host_servers() -> Iterator[dict[str, int]]:
    """A server on the host's loopback and one on all its addresses: their ports."""
    _Counting.hits = []
    servers = {
        "loopback": http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting),
        "every": http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Counting),
    }
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {name: server.server_address[1] for name, server in servers.items()}
    for server in servers.values():
        server.shutdown()
        server.server_close()


def _host_addresses() -> list[str]:
    """This host's IPv4 addresses (every interface's)."""
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True)
    return sorted({line.split()[3].split("/")[0] for line in out.stdout.splitlines()})


PROBE = """
import socket, sys, urllib.request
for target in sys.argv[1:]:
    try:
        body = urllib.request.urlopen("http://" + target + "/", timeout=5).read()
        print("REACHED", target, body[:20])
    except Exception as exc:
        print("refused", target, type(exc).__name__)
"""


def _gateway(box) -> str:  # noqa: ANN001
    """The sandbox's default gateway, read from its routing table."""
    table = box.run("cat /proc/net/route").output.splitlines()[1:]
    for line in table:
        fields = line.split()
        if len(fields) > 2 and fields[1] == "00000000":
            return socket.inet_ntoa(bytes.fromhex(fields[2])[::-1])
    raise AssertionError(f"no default route in {table}")


@pytest.fixture
def networked(backend: str) -> Iterator:
    """A started sandbox of `backend` with a network and Docker's default capabilities
    (as an imported task runs)."""
    box = make_sandbox(
        backend, SandboxConfig(network=True, capabilities=DOCKER_DEFAULT_CAPS, memory_mb=512)
    )
    box.start()
    yield box
    box.close()


def test_a_networked_sandbox_reaches_no_service_of_the_host(
    networked, backend: str, host_servers: dict[str, int]
) -> None:
    box = networked
    hosts = ["127.0.0.1", _gateway(box), *_host_addresses()]
    if backend == "bwrap":
        hosts.append("10.0.2.2")  # slirp4netns's gateway: the host's loopback unless disabled
    targets = [f"{host}:{port}" for host in hosts for port in host_servers.values()]
    out = box.run(f"python3 - {' '.join(targets)} <<'EOF'\n{PROBE}\nEOF", timeout=120).output
    assert out.count("refused") == len(targets), out
    assert "REACHED" not in out
    assert _Counting.hits == [], f"the host's servers were reached from {_Counting.hits}"


def test_a_networked_sandbox_resolves_names_and_reaches_the_debian_mirror(networked) -> None:
    out = networked.run(
        "getent hosts deb.debian.org && apt-get update >/tmp/apt.log 2>&1; echo status=$?; "
        "tail -3 /tmp/apt.log",
        timeout=300,
    ).output
    assert "deb.debian.org" in out.splitlines()[0], out
    assert "status=0" in out, out


def test_networked_sandboxes_of_two_episodes_cannot_reach_each_other(backend: str) -> None:
    """Each bwrap sandbox has a network namespace of its own; docker's join termgym's
    bridge, on which containers cannot reach each other."""
    server, client = (
        make_sandbox(backend, SandboxConfig(network=True, memory_mb=256)) for _ in range(2)
    )
    try:
        server.start()
        client.start()
        server.run("cd /tmp && echo other-episode > index.html")
        server.run("cd /tmp && (python3 -m http.server 8000 >/dev/null 2>&1 &)")
        assert (
            "other-episode"
            in server.run(
                'for i in $(seq 50); do python3 -c "import urllib.request as u;'
                "print(u.urlopen('http://127.0.0.1:8000/', timeout=1).read().decode())\" "
                "2>/dev/null && break; sleep 0.2; done"
            ).output
        )
        address = server.run("hostname -I 2>/dev/null || true").output.split()
        targets = [f"{a}:8000" for a in address if a.count(".") == 3]
        if backend == "bwrap":
            assert targets == ["10.0.2.100:8000"]  # every one has slirp's address
        out = client.run(f"python3 - {' '.join(targets)} <<'EOF'\n{PROBE}\nEOF").output
        assert "REACHED" not in out, out
    finally:
        server.close()
        client.close()


def test_live_state_grading_joins_a_networked_agent_sandbox(backend: str) -> None:
    task = load_task(LIVE)
    limits = task.spec.limits.model_copy(update={"network": True})
    task = dataclasses.replace(task, spec=task.spec.model_copy(update={"limits": limits}))
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        body = task.path("solution/oracle.sh").read_text()
        env.step(f"bash <<'TERMGYM_SOLUTION'\n{body}\nTERMGYM_SOLUTION")
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert info["error"] is None and (reward, info["class"]) == (1.0, "adapted"), info
