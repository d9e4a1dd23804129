"""Images: the base image is cached by recipe; task images build FROM it."""

from __future__ import annotations

from pathlib import Path

import pytest

from termgym.errors import ImageError
from termgym.images._engine import docker_client
from termgym.sandbox import (
    BASE_IMAGE,
    RECIPE_LABEL,
    SandboxConfig,
    build_base,
    build_image,
    make_sandbox,
    recipe_hash,
)

pytestmark = pytest.mark.docker


def test_second_base_build_is_a_cache_hit_that_builds_nothing(base_image: str) -> None:
    before = docker_client().images.get(BASE_IMAGE).id
    said: list[str] = []
    image_id = build_base(log=said.append)
    assert said == [f"{BASE_IMAGE} is up to date (recipe {recipe_hash()})."]  # nothing built
    image = docker_client().images.get(BASE_IMAGE)
    assert image.id == image_id == before and image.labels[RECIPE_LABEL] == recipe_hash()


def test_base_image_has_what_tasks_need(base_image: str) -> None:
    with make_sandbox("docker", SandboxConfig()) as box:
        probe = "python3 -c 'import sqlite3, pytest'; bash --version | head -1; tmux -V; git --version; make --version | head -1; jq --version"  # noqa: E501
        result = box.run(probe, timeout=30)
        assert result.exit_code == 0, result.output
        assert "tmux" in result.output and "jq-" in result.output


def test_task_image_builds_from_a_dockerfile_on_the_base(base_image: str, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo built > /opt/marker\n")
    tag = "termgym/test-task:latest"
    try:
        image_id = build_image(tmp_path, tag)
        assert docker_client().images.get(tag).id == image_id
        with make_sandbox("docker", SandboxConfig(image=tag)) as box:
            assert box.run("cat /opt/marker").output == "built\n"
    finally:
        docker_client().images.remove(tag, force=True)


def test_task_image_without_dockerfile_is_an_image_error(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="Expected a Dockerfile"):
        build_image(tmp_path, "termgym/never:built")
