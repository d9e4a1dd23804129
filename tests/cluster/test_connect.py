"""`--ray local` starts a Ray instance of its own, whatever other cluster runs here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cluster.conftest import RayCluster

pytestmark = pytest.mark.slow

PROGRAM = """
import json
from termgym.cluster import SANDBOX_RESOURCE, connect
ray = connect("local", sandboxes=3)
print(json.dumps({"sandboxes": ray.cluster_resources().get(SANDBOX_RESOURCE),
                  "nodes": len(ray.nodes())}))
ray.shutdown()
"""


def test_local_starts_its_own_instance_beside_a_running_cluster(ray_cluster: RayCluster) -> None:
    # The session's cluster (a head and two workers advertising 2 sandboxes each) is the one
    # Ray's own discovery would find; "local" must not join it (ray.init() with no address
    # did, and then refused the resources it was given).
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONPATH": ""}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == '{"sandboxes": 3.0, "nodes": 1}'
