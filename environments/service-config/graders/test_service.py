"""Hidden checks: the config holds the guide's settings, and the service really uses them."""

from __future__ import annotations

import configparser
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
CONFIG = APP / "etc" / "webapp.ini"
SERVICE = Path(__file__).with_name("reference_webapp.py")


def read_config() -> configparser.ConfigParser:
    assert CONFIG.is_file(), "etc/webapp.ini does not exist"
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(CONFIG)
    return parser


def test_the_config_states_the_guides_production_values(rules):
    parser = read_config()
    assert parser.get("server", "host") == "127.0.0.1"
    assert parser.getint("server", "port") == rules["port"]
    assert parser.getint("server", "max_connections") == rules["max_connections"]
    assert parser.get("logging", "level") == rules["log_level"]
    example = configparser.ConfigParser(interpolation=None)
    example.read(Path(__file__).with_name("webapp.ini.example"))
    assert parser.get("logging", "file") == example.get("logging", "file")
    assert parser.get("app", "name") == example.get("app", "name")


@pytest.fixture
def service(tmp_path):
    """The reference service started on the agent's config (logging to a scratch file)."""
    parser = read_config()
    parser.set("logging", "file", str(tmp_path / "logs" / "webapp.log"))
    config = tmp_path / "webapp.ini"
    with open(config, "w") as handle:
        parser.write(handle)
    proc = subprocess.Popen(
        [sys.executable, str(SERVICE), str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    yield proc, parser.getint("server", "port", fallback=0)
    proc.kill()
    proc.wait()


def wait_for(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the service exited: {proc.stdout.read()[-500:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"nothing listens on port {port} after 5 s")


def test_the_service_answers_on_the_guides_port_with_the_guides_limits(service, rules):
    proc, configured = service
    assert configured == rules["port"], f"config says port {configured}, guide says {rules['port']}"
    wait_for(rules["port"], proc)
    with urllib.request.urlopen(f"http://127.0.0.1:{rules['port']}/health", timeout=5) as resp:
        health = json.load(resp)
    assert health["status"] == "ok"
    assert health["max_connections"] == rules["max_connections"]
    assert health["log_level"] == rules["log_level"]
