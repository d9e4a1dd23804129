"""Connecting to Ray, and the custom resource through which nodes say how many sandboxes
they hold."""

from __future__ import annotations

import os
from types import ModuleType

from termgym.errors import ClusterError

SANDBOX_RESOURCE = "termgym_sandbox"
"""The custom Ray resource a node advertises, one unit per sandbox it can run at once
(`ray start --resources='{"termgym_sandbox": 8}'`). Every episode and every RayVectorEnv
sub-environment asks for one unit, so a node never runs more than it advertised."""

LOCAL = "local"
"""`connect("local")`: start a one-machine Ray instance here, advertising `sandboxes`."""


def require_ray() -> ModuleType:
    """The `ray` module, or ClusterError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ClusterError(
            "termgym on Ray needs the `ray` package; found none importable "
            f"({exc}). Install it with: pip install 'termgym[ray]'"
        ) from exc
    return ray


def connect(address: str, *, sandboxes: int = 2) -> ModuleType:
    """Connect this process to a Ray cluster once; return the `ray` module.

    Args:
        address: "auto" (the cluster this machine is part of, as `ray.init("auto")`),
            "local" (start a Ray instance on this machine whose one node advertises
            `sandboxes`), or a cluster address ("ray://head:10001", "head:6379").
        sandboxes: For "local" only: how many sandboxes the local node holds.

    Raises:
        ClusterError: Ray is missing or no cluster answers at `address`.
    """
    if address == LOCAL:  # one machine: Ray's services on loopback (read when ray is imported)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require_ray()
    if ray.is_initialized():
        return ray
    options: dict[str, object] = {"log_to_driver": False, "include_dashboard": False}
    try:
        if address == LOCAL:  # one machine: every Ray service on loopback
            ray.init(  # "local": a new instance, never a `ray start` cluster found here
                address="local",
                resources={SANDBOX_RESOURCE: float(sandboxes)},
                _node_ip_address="127.0.0.1",
                **options,
            )
        else:
            ray.init(address=address, **options)
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError depending on how
        raise ClusterError(
            f"expected a Ray cluster at {address!r}, but connecting failed "
            f"({type(exc).__name__}: {exc}). Start one with `ray start --head "
            f"--resources='{{\"{SANDBOX_RESOURCE}\": N}}'`, or use --ray local."
        ) from exc
    return ray


def sandbox_capacity() -> int:
    """Sandboxes the connected cluster's live nodes advertise in total.

    Raises:
        ClusterError: no node advertises the resource (tasks would wait forever).
    """
    ray = require_ray()
    total = int(ray.cluster_resources().get(SANDBOX_RESOURCE, 0))
    if total <= 0:
        raise ClusterError(
            f"expected nodes advertising the Ray resource {SANDBOX_RESOURCE!r}, found none "
            f"in {sorted(ray.cluster_resources())}. Start each node with "
            f"`ray start ... --resources='{{\"{SANDBOX_RESOURCE}\": N}}'` (N: sandboxes it "
            "can hold at once; docs/scaling.md)."
        )
    return total
