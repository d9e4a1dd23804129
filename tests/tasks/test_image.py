"""A task with a Dockerfile gets its own image, built without its graders or solutions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from termgym.errors import BackendUnavailable, ImageError
from termgym.sandbox import SandboxConfig, make_sandbox, rootfs_for
from termgym.tasks import image_tag, load_task, task_image


@pytest.mark.docker
def test_dockerfile_tasks_build_an_image_that_holds_no_grader(task_folder, docker_engine):
    folder = task_folder(name="built-task", spec={"image": None, "dockerfile": "Dockerfile"})
    (folder / "Dockerfile").write_text(
        "FROM termgym/base:bookworm\nCOPY . /opt/task/\nRUN touch /opt/built-marker\n"
    )
    task = load_task(folder)
    assert task_image(task) == image_tag(task) == "termgym/task-built-task:v1"
    with make_sandbox("docker", SandboxConfig(image=image_tag(task))) as box:
        listing = box.exec(["bash", "-c", "ls /opt/built-marker; ls -A /opt/task"], workdir="/")
    assert listing.exit_code == 0, listing.output
    assert listing.output.split() == ["/opt/built-marker", "Dockerfile", "files"]


@pytest.fixture
def no_docker_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No engine answers (the bwrap backend's daemon-free mode)."""
    from termgym.images._build import _forget_rootfs
    from termgym.images._engine import forget_clients
    from termgym.sandbox import BASE_IMAGE

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    forget_clients()
    _forget_rootfs(BASE_IMAGE)
    yield
    monkeypatch.undo()
    forget_clients()
    _forget_rootfs(BASE_IMAGE)


def test_without_a_docker_engine_a_dockerfile_task_says_its_image_needs_one(
    task_folder, no_docker_engine: None
) -> None:
    """Only an engine builds a task's own image, whichever the backend: the error said "use
    the daemon-free bubblewrap backend" to a user already on it."""
    folder = task_folder(name="built-task", spec={"image": None, "dockerfile": "Dockerfile"})
    (folder / "Dockerfile").write_text("FROM termgym/base:bookworm\nRUN touch /opt/marker\n")
    with pytest.raises(BackendUnavailable) as raised:
        task_image(load_task(folder))
    said = str(raised.value)
    assert said.startswith("Building termgym/task-built-task:v1 from its Dockerfile needs a ")
    assert "bwrap runs only the base image" in said and "backend='bwrap'" not in said


def test_without_a_docker_engine_bwrap_on_another_image_says_it_needs_one(
    no_docker_engine: None,
) -> None:
    with pytest.raises(ImageError) as raised:
        rootfs_for("debian:bookworm-slim")
    said = str(raised.value)
    assert said.startswith("The root filesystem of debian:bookworm-slim for bwrap needs a ")
    assert "bwrap runs only the base image" in said and "backend='bwrap'" not in said
