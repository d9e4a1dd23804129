"""termgym's Docker network: the bridge network that networked Docker sandboxes join.

Made once per engine, under a lock of the machine's; its bridge is kept off the host by
`termgym.isolation.wall_docker` where the bridge is on this host (`bridge_for`).
"""

from __future__ import annotations

import threading
from typing import Any

from termgym.images import cache_dir, making
from termgym.isolation import bridge_for

NETWORK = "termgym"
"""termgym's docker network: networked sandboxes join it instead of the default bridge."""

_lock = threading.Lock()
_networks: dict[str, str] = {}


def docker_network(client: Any, address: str) -> str:
    """termgym's bridge network on the engine at `address` (made once; its name).

    Its containers cannot reach each other (`enable_icc` off): one episode never reaches
    another's services. Where its bridge is on this host, `wall_docker` keeps them off it.
    Two processes that find it missing at once make it one after the other, under a lock
    of the machine's (the engine refused the second with "conflicts with network ...
    same bridge name"); one made by another process meanwhile is taken as it is.
    """
    with _lock:
        if address in _networks:
            return _networks[address]
    if _network_id(client) is None:
        with making(cache_dir() / "locks" / "docker-network"):
            if _network_id(client) is None:
                _make_network(client, bridge_for(address))
    with _lock:
        _networks[address] = NETWORK
    return NETWORK


def _network_id(client: Any) -> str | None:
    """The id of the network named NETWORK (exactly: the engine's filter matches a part of
    the name), or None."""
    for found in client.api.networks(names=[NETWORK]):
        if found.get("Name") == NETWORK:
            return str(found["Id"])
    return None


def _make_network(client: Any, bridge: str) -> None:
    import docker.errors

    try:
        client.networks.create(
            NETWORK, driver="bridge", check_duplicate=True,
            options={
                "com.docker.network.bridge.name": bridge,
                "com.docker.network.bridge.enable_icc": "false",
            },
            labels={"io.termgym.network": "1"},
        )  # fmt: skip
    except docker.errors.APIError:
        # made by a process with another cache (no shared lock) just now: that one is ours
        if _network_id(client) is None:
            raise
