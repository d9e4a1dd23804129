"""A real multi-node Ray cluster on this machine: a head without sandboxes and two worker
nodes advertising two sandboxes each (`ray.cluster_utils.Cluster`), shared by the session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Every Ray service of these tests (and of the processes they start) binds and connects on
# loopback: Ray otherwise resolves 127.0.0.1 to the machine's network address. Ray reads this
# when first imported, so it is set before.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from termgym.cluster import SANDBOX_RESOURCE  # noqa: E402
from tests.env.conftest import run_id  # noqa: E402, F401 - the per-test run id fixture

EXAMPLE_TASKS = str(Path(__file__).resolve().parents[2] / "examples" / "tasks")
LOOPBACK = "127.0.0.1"  # every node of the test cluster listens on loopback only
WORKER = {"num_cpus": 2, "resources": {SANDBOX_RESOURCE: 2}, "node_ip_address": LOOPBACK}


@dataclass
class RayCluster:
    """The cluster, its address, and its two worker nodes (replaced when a test kills one)."""

    cluster: Any
    workers: list[Any]

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def node_ids(self) -> set[str]:
        return {node.node_id for node in self.workers}

    def kill_worker(self, node: Any) -> None:
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)

    def restore(self) -> None:
        while len(self.workers) < 2:
            self.workers.append(self.cluster.add_node(**WORKER))
        self.cluster.wait_for_nodes()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "node_ip_address": LOOPBACK},
    )
    workers = [cluster.add_node(**WORKER) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield RayCluster(cluster, workers)
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture
def ray_on(ray_cluster: RayCluster) -> Iterator[RayCluster]:
    """The cluster with both workers up before and after the test."""
    ray_cluster.restore()
    yield ray_cluster
    ray_cluster.restore()
