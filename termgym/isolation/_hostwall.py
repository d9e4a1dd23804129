"""Firewall rules that keep networked sandboxes off the host's own addresses, every one of them.

A sandbox with a network reaches the internet through the host, and so, unless told not
to, the host itself: a docker container on a bridge reaches every service the host binds
to 0.0.0.0 at the bridge's gateway, and slirp4netns (a bwrap sandbox's network) connects
from the host, so a bwrap sandbox would reach them at any of the host's addresses. Neither
reaches the host's loopback by itself (a container's 127.0.0.1 is its own; slirp4netns runs
with `--disable-host-loopback`). Where termgym runs as root with iptables, it adds, once,
rules that refuse the rest:

- bwrap: packets from the sandboxes' host uids (slirp4netns runs as the sandbox's root,
  `UID_BASE`..+65535) to any local address of the host (`addrtype LOCAL`), but DNS (the
  host's resolver may listen there, and slirp4netns forwards the sandbox's queries to it);
- docker: packets into the host from termgym's own bridge (BRIDGE), which networked
  sandboxes join (its containers cannot reach each other either: no inter-container traffic).

Elsewhere (not root, no iptables, a remote engine) the rules cannot be set; `wall_*` say why
and the backends say so once.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading

BRIDGE = "termgym0"
"""The bridge interface of termgym's docker network (`termgym.sandbox._dockernet`)."""

_lock = threading.Lock()
_held: dict[str, str] = {}


def wall_bwrap(uid_base: int, count: int = 65536) -> str:
    """Refuse the bwrap sandboxes' network stacks the host's addresses; "" when it holds."""
    owner = ["-m", "owner", "--uid-owner", f"{uid_base}-{uid_base + count - 1}"]
    local = ["-m", "addrtype", "--dst-type", "LOCAL"]
    rules = [  # inserted in this order at the top: the DNS exceptions end up first
        [*owner, *local, "-j", "REJECT"],
        [*owner, *local, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
        [*owner, *local, "-p", "udp", "--dport", "53", "-j", "ACCEPT"],
        [*owner, *local, "-p", "tcp", "--dport", "53", "-j", "ACCEPT"],
    ]
    return _hold(f"bwrap-{uid_base}", "OUTPUT", rules)


def wall_docker(bridge: str = BRIDGE) -> str:
    """Refuse the host to what comes from termgym's bridge `bridge`; "" when it holds."""
    rules = [
        ["-i", bridge, "-j", "REJECT"],
        ["-i", bridge, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
    ]
    return _hold(f"docker-{bridge}", "INPUT", rules)


LOCAL_ENGINES = ("unix:///var/run/docker.sock", "unix:///run/docker.sock")
"""The host's own engine: its termgym network's bridge is BRIDGE."""


def bridge_for(address: str) -> str:
    """The bridge interface of termgym's network on the engine at `address`: BRIDGE on the
    host's own engine, a name of its own on any other (a second engine on the host, rootless
    docker beside the system's: two networks would otherwise claim one interface)."""
    if address in LOCAL_ENGINES:
        return BRIDGE
    return "tg" + hashlib.sha256(address.encode()).hexdigest()[:10]


def _hold(key: str, chain: str, rules: list[list[str]]) -> str:
    with _lock:
        if key not in _held:
            _held[key] = _insert(chain, rules)
        return _held[key]


def _insert(chain: str, rules: list[list[str]]) -> str:
    import os

    if os.geteuid() != 0:
        return "termgym does not run as root"
    tools = [t for t in (shutil.which("iptables"), shutil.which("ip6tables")) if t]
    if not tools:
        return "iptables is not installed"
    for index, tool in enumerate(tools):
        for rule in rules:
            if index > 0 and "--dst-type" in rule:
                continue  # slirp4netns runs without IPv6

            check = subprocess.run(
                [tool, "-w", "-C", chain, *rule], capture_output=True, timeout=30, check=False
            )
            if check.returncode == 0:
                continue
            done = subprocess.run(
                [tool, "-w", "-I", chain, "1", *rule], capture_output=True, timeout=30, check=False
            )
            if done.returncode != 0 and index == 0:
                return f"{tool} refused a rule: {done.stderr.decode(errors='replace').strip()}"
    return ""


_said: set[str] = set()


def say_once(key: str, message: str) -> None:
    """Log a warning once per process and key."""
    import logging

    with _lock:
        if key in _said:
            return
        _said.add(key)
    logging.getLogger(__name__).warning(message)
