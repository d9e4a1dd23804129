"""A build whose own step fails is not retried (it fails the same way every time); one whose
log shows the network or the engine failing is (another attempt may pass)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from termgym.agents import SUBMIT, register_agent, unregister_agent
from termgym.errors import ImageBuildFailed, ImageError
from termgym.images._build import build_failure
from termgym.run import RunConfig, Runner

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasks"


def test_a_failed_step_is_deterministic_and_a_network_failure_is_not() -> None:
    step = build_failure("t", "The command '/bin/sh -c exit 3' returned a non-zero code: 3", "")
    assert isinstance(step, ImageBuildFailed)
    for log in (
        "Err:1 http://deb.debian.org/debian bookworm InRelease\n"
        "  Temporary failure resolving 'deb.debian.org'\n",
        "ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host="
        "'pypi.org', port=443): Max retries exceeded with url: /simple/numpy/\n",
        "E: Failed to fetch http://deb.debian.org/debian/pool/main/g/gcc.deb  503 Service "
        "Unavailable\n",
        "failed to register layer: no space left on device\n",
    ):
        found = build_failure("t", "returned a non-zero code: 100", log)
        assert type(found) is ImageError, log


class _Submitter:
    name = "submitter"
    privileged = False

    def reset(self, context) -> None:  # noqa: ANN001
        pass

    def act(self, observation) -> str:  # noqa: ANN001
        return SUBMIT

    def transcript(self) -> list:
        return []


@pytest.mark.docker
@pytest.mark.usefixtures("base_image")
def test_a_run_does_not_retry_a_build_whose_own_step_fails(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "broken-build"
    shutil.copytree(FIXTURES / "tiny-limit", folder)
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec.update(id="broken-build", dockerfile="Dockerfile")
    spec.pop("image", None)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (folder / "Dockerfile").write_text(
        "FROM termgym/base:bookworm\nRUN echo 'the step fails' && exit 3\n"
    )
    register_agent("submitter", _Submitter)
    try:
        config = RunConfig(
            agent="submitter", tasks=("broken-build",), variants=("original",), episodes=1,
            out=tmp_path / "run", backend="docker", retries=2, paths=(str(folder.parent),),
        )  # fmt: skip
        summary = Runner(config).run()
    finally:
        unregister_agent("submitter")
    (result,) = summary.results
    assert result.status == "infra-error" and result.attempts == 1, result
    assert "returned a non-zero code: 3" in result.error
