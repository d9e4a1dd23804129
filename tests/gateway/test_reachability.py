"""Per backend (docker, bwrap): an agent in a sandbox with the gateway reaches the gateway and
nothing else (not the host's loopback or its other addresses, not another episode's
sandbox, not a verifier, not the internet), never sees the endpoint's key, and gains
nothing by killing the relay and listening in its place."""

from __future__ import annotations

import json
import socket
import subprocess
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from termgym.gateway import Gateway, Route, Upstream
from termgym.grading import verifier_config
from termgym.sandbox import (
    HOST_COPY,
    FileTree,
    GatewayMount,
    Sandbox,
    SandboxConfig,
    make_sandbox,
)

from .conftest import KEY, ModelServer, Turn

SCRIPT = Path(__file__).with_name("in_sandbox.py")
INTERNET = [("1.1.1.1", 53), ("8.8.8.8", 443)]


@pytest.fixture
def host_service() -> Iterator[int]:
    """A TCP service on every address of the host (0.0.0.0): what a sandbox must not reach."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _host_addresses() -> list[str]:
    listed = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True)
    return [line.split()[3].split("/")[0] for line in listed.stdout.splitlines()]


@pytest.fixture
def boxes(backend: str) -> Iterator[Callable[[SandboxConfig], Sandbox]]:
    made: list[Sandbox] = []

    def start(config: SandboxConfig) -> Sandbox:
        box = make_sandbox(backend, config)
        made.append(box)
        box.start()
        return box

    yield start
    for box in made:
        box.close()


class _Scan:
    """A tar stream read for secrets as it passes, never stored (what `export_paths` writes)."""

    def __init__(self, needles: list[str]) -> None:
        self.needles = [n.encode() for n in needles]
        self.tail = b""
        self.found: set[bytes] = set()
        self.size = 0

    def write(self, data: bytes) -> int:
        window = self.tail + bytes(data)
        self.found |= {n for n in self.needles if n in window}
        self.tail = window[-max(map(len, self.needles)) :]
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        pass


def _files_holding(box: Sandbox, needles: list[str]) -> set[bytes]:
    """The needles found in any file of the sandbox (its whole tree but /proc, /sys, /dev),
    read from the host."""
    top = box.run("ls -1 /").output.split()
    scan = _Scan(needles)
    box.export_paths(
        [f"/{name}" for name in top if name not in ("proc", "sys", "dev")], scan, HOST_COPY
    )
    assert scan.size > 50 << 20  # the image's files were read, not an empty tree
    return scan.found


def _probe(box: Sandbox, route: Route, targets: list[tuple[str, int]]) -> dict:
    config = {"gateway": route.sandbox_url, "targets": targets}
    box.copy_in(
        FileTree(
            {
                "probe.py": (SCRIPT.read_bytes(), 0o644),
                "config.json": (json.dumps(config).encode(), 0o644),
            }
        ),
        "/tmp/gw",
    )
    done = box.run(
        f"OPENAI_API_KEY={route.token} python3 /tmp/gw/probe.py /tmp/gw/config.json", timeout=90
    )
    assert done.exit_code == 0, done.output
    return json.loads(done.output.strip().splitlines()[-1])


def test_an_agent_reaches_the_gateway_and_nothing_else(
    backend: str,
    model_server: ModelServer,
    host_service: int,
    boxes: Callable[[SandboxConfig], Sandbox],
) -> None:
    with Gateway(Upstream(model_server.base_url, api_key=KEY), host=True) as gateway:
        mine, theirs = gateway.open_route("ep-a"), gateway.open_route("ep-b")
        config = SandboxConfig(gateway=gateway.mount, memory_mb=512)
        other = boxes(config)  # another episode's sandbox, with a service of its own
        other.run("nohup python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1 &")
        assert (
            other.run(
                "sleep 0.5; python3 -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:18080')\""
            ).exit_code
            == 0
        )
        verifier = boxes(verifier_config(config))
        assert verifier.config.gateway is None
        listener = textwrap.dedent("""
            import os, socket
            server = socket.create_server(("127.0.0.1", 18081))
            server.settimeout(0.1)
            print("listening", flush=True)
            open("/tmp/listen/ready", "w").close()
            connections = 0
            while not os.path.exists("/tmp/stop/now"):
                try:
                    server.accept()[0].close()
                    connections += 1
                except OSError:
                    pass
            print("connections", connections)
        """)
        verifier.copy_in(FileTree({"listen.py": (listener.encode(), 0o644)}), "/tmp/listen")
        heard: list[str] = []
        listening = threading.Thread(
            target=lambda: heard.append(
                verifier.exec(["python3", "/tmp/listen/listen.py"], timeout=120).output
            )
        )
        listening.start()
        box = boxes(config)
        while verifier.exec(["test", "-e", "/tmp/listen/ready"]).exit_code != 0:
            time.sleep(0.1)  # the verifier listens before the agent looks for it
        model_server.turns.append(Turn("hello from the model"))
        upstream_port = int(model_server.base_url.split(":")[2].split("/")[0])
        host_port = int(gateway.host_origin.rsplit(":", 1)[1])
        targets = [
            ("127.0.0.1", upstream_port),
            ("127.0.0.1", host_port),
            ("127.0.0.1", host_service),
            ("127.0.0.1", 18080),
            ("127.0.0.1", 18081),
        ]
        targets += [(address, host_service) for address in _host_addresses()] + INTERNET
        seen = _probe(box, mine, targets)
        verifier.copy_in(FileTree({"now": (b"", 0o644)}), "/tmp/stop")
        listening.join()
        assert heard[0].split() == ["listening", "connections", "0"], heard

        assert seen["with_token"] == [200, "hello from the model"]
        assert seen["without_token"][0] == 401 and seen["wrong_token"][0] == 401
        assert {where: how for where, how in seen["targets"].items() if how == "connected"} == {}
        processes = json.dumps(seen["processes"])
        assert mine.token in processes  # what the agent was given, seen where it was given
        assert KEY not in processes and theirs.token not in processes
        assert _files_holding(box, [KEY, theirs.token]) == set()
        assert [c.status for c in mine.calls()] == [200] and theirs.calls() == ()
        assert model_server.seen[0].headers["authorization"] == f"Bearer {KEY}"
        assert verifier.exec(["ls", "/dev/termgym"]).exit_code != 0  # a verifier never gets it
        # a program started by exec (Harbor's environment.exec) reaches it as the shell does
        model_server.turns.append(Turn("to an exec"))
        only = json.dumps({"gateway": mine.sandbox_url, "targets": []}).encode()
        box.copy_in(FileTree({"only.json": (only, 0o644)}), "/tmp/exec")
        config_file = "/tmp/exec/only.json"
        execd = box.exec(
            ["python3", "/tmp/gw/probe.py", config_file], env={"OPENAI_API_KEY": mine.token}
        )
        assert json.loads(execd.output.strip().splitlines()[-1])["with_token"] == [
            200,
            "to an exec",
        ]


def test_an_agent_that_kills_the_relay_and_listens_itself_gains_nothing(
    backend: str, model_server: ModelServer, boxes: Callable[[SandboxConfig], Sandbox]
) -> None:
    with Gateway(Upstream(model_server.base_url, api_key=KEY)) as gateway:
        route = gateway.open_route("ep-hostile")
        box = boxes(SandboxConfig(gateway=gateway.mount, memory_mb=512))
        killed = box.run(
            "for p in /proc/[0-9]*; do grep -qa /dev/termgym/relay $p/cmdline 2>/dev/null && "
            "[ ${p#/proc/} != $$ ] && kill -9 ${p#/proc/}; done; sleep 0.3; "
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 38291), 2)\""
        )
        assert killed.exit_code != 0 and "Connection refused" in killed.output  # the relay is gone
        # its own relay on the port: a plain forwarder to the socket, as a hostile agent writes
        own = textwrap.dedent("""
            import socket, threading
            server = socket.create_server(("127.0.0.1", 38291))
            def pump(a, b):
                while data := a.recv(65536):
                    b.sendall(data)
                b.shutdown(socket.SHUT_WR)
            while True:
                client, _ = server.accept()
                up = socket.socket(socket.AF_UNIX)
                up.connect("/dev/termgym/gateway.sock")
                threading.Thread(target=pump, args=(client, up)).start()
                threading.Thread(target=pump, args=(up, client)).start()
        """)
        box.copy_in(FileTree({"own.py": (own.encode(), 0o644)}), "/tmp/own")
        box.run("nohup python3 /tmp/own/own.py >/dev/null 2>&1 & sleep 0.5")
        model_server.turns.append(Turn("still only the model"))
        seen = _probe(box, route, INTERNET + [("127.0.0.1", 22)])
        assert seen["with_token"] == [200, "still only the model"]
        assert seen["without_token"][0] == 401 and seen["wrong_token"][0] == 401
        assert "connected" not in seen["targets"].values()
        assert KEY not in json.dumps(seen["processes"])
        # straight to the socket, no relay at all: the same gateway, the same token check
        raw = textwrap.dedent("""
            import socket
            up = socket.socket(socket.AF_UNIX)
            up.connect("/dev/termgym/gateway.sock")
            up.sendall(b"POST /v1/chat/completions HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}")
            print(up.recv(100))
        """)
        box.copy_in(FileTree({"raw.py": (raw.encode(), 0o644)}), "/tmp/raw")
        raw_answer = box.run("python3 /tmp/raw/raw.py")
        assert "401" in raw_answer.output
        assert [c.status for c in route.calls()] == [200]


def test_a_backend_without_the_gateway_refuses_it_before_starting(tmp_path: Path) -> None:
    from termgym.errors import SandboxError

    mount = GatewayMount(str(tmp_path / "gateway.sock"))
    with pytest.raises(
        SandboxError, match="local backend does not give a sandbox the model gateway"
    ):
        make_sandbox("local", SandboxConfig(gateway=mount), allow_local=True)
    with pytest.raises(ValueError, match="expected a TCP port"):
        GatewayMount(str(tmp_path / "gateway.sock"), port=70000)
