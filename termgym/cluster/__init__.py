"""termgym on a Ray cluster: connecting, the sandbox resource nodes advertise, shipping task
folders to nodes, and reaping what a lost worker left behind (docs/scaling.md).

Ray is an optional dependency (`pip install 'termgym[ray]'`); nothing here imports it until
it is used.
"""

from __future__ import annotations

from termgym.cluster._connect import (
    SANDBOX_RESOURCE,
    connect,
    require_ray,
    sandbox_capacity,
)
from termgym.cluster._reap import (
    new_scratch,
    reap_run_here,
    reap_run_on_every_node,
    reap_scratch_here,
)
from termgym.cluster._shipping import TaskBundle, bundle_task, unpack_bundles

__all__ = [
    "SANDBOX_RESOURCE",
    "TaskBundle",
    "bundle_task",
    "connect",
    "new_scratch",
    "reap_run_here",
    "reap_run_on_every_node",
    "reap_scratch_here",
    "require_ray",
    "sandbox_capacity",
    "unpack_bundles",
]
