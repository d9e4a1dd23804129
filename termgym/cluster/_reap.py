"""Removing the containers of a run whose starting process died (a Ray worker killed with its
node, a driver killed mid-run): on this node, or on every live node of the cluster."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from termgym.cluster._connect import require_ray

log = logging.getLogger(__name__)


def reap_run_here(run_id: str) -> list[str]:
    """Remove this host's containers of run `run_id` whose starting process is gone.

    Only containers labelled with the run are considered, so other runs (and other users of
    the engine) are never touched. Returns the names removed; without a Docker engine, none.
    """
    from termgym.errors import BackendUnavailable
    from termgym.sandbox import collect_garbage

    try:
        return collect_garbage(labels={"io.termgym.run": run_id})
    except BackendUnavailable:
        return []


SCRATCH_PREFIX = "termgym-ray-"
"""A Ray episode worker's scratch folder in the temporary folder: `termgym-ray-PID-XXXX`."""


def new_scratch() -> Path:
    """A scratch folder for this worker process, named by its pid so that another worker
    on the node can remove it once this process is gone."""
    return Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))


def reap_scratch_here() -> list[str]:
    """Remove the scratch folders of this node's episode workers whose process is gone (a
    worker killed with its node never closes). Returns the folders removed."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = folder.name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(folder)
            removed.append(str(folder))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def reap_run_on_every_node(run_id: str, timeout: float = 60.0) -> list[str]:
    """Run `reap_run_here` once on each live node of the connected cluster."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(num_cpus=0, max_retries=0)(reap_run_here)
    refs = [
        remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote(run_id)
        for node in ray.nodes()
        if node.get("Alive")
    ]
    removed: list[str] = []
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    for ref in ready:
        try:
            removed += ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a node that cannot reap is reported, not fatal
            log.warning("could not reap containers of run %s on a node: %s", run_id, exc)
    return removed
