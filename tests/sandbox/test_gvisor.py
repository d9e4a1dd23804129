"""gVisor: docker sandboxes (agent's and verifier's) under runsc, where the engine has it."""

from __future__ import annotations

import pytest

import termgym
from termgym.errors import SandboxStartError
from termgym.images._engine import docker_client
from termgym.sandbox import SandboxConfig, make_sandbox

pytestmark = pytest.mark.docker


def _runsc_registered() -> bool:
    return "runsc" in (docker_client().info().get("Runtimes") or {})


@pytest.fixture
def runsc(base_image: str) -> str:
    if not _runsc_registered():
        pytest.skip(
            "the Docker engine has no runsc runtime (install Debian's runsc and let `make "
            "system` start dockerd, or register it yourself: docs/security.md)"
        )
    return "runsc"


def test_a_sandbox_under_runsc_runs_on_gvisors_kernel(runsc: str) -> None:
    box = make_sandbox("docker", SandboxConfig(runtime=runsc))
    box.start()
    try:
        assert box.container.attrs["HostConfig"]["Runtime"] == "runsc"  # type: ignore[attr-defined]
        assert "gVisor" in box.run("dmesg | head -1").output
    finally:
        box.close()


def test_an_episode_under_runsc_is_graded_under_runsc_too(runsc: str) -> None:
    env = termgym.make("fuel-planner", variant="contradicted", backend="docker", runtime=runsc)
    try:
        env.reset(seed=0)
        task = env.options.task
        env.step(f"bash <<'X'\n{task.path(task.spec.oracle).read_text()}\nX")
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert info["error"] is None and (reward, info["class"]) == (1.0, "adapted")


def test_an_unknown_runtime_is_refused_saying_how_to_register_one(base_image: str) -> None:
    box = make_sandbox("docker", SandboxConfig(runtime="no-such-runtime"))
    with pytest.raises(SandboxStartError, match="does not know the runtime 'no-such-runtime'"):
        box.start()
