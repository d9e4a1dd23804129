"""A task with a Dockerfile gets its own image, built without its graders or solutions."""

from __future__ import annotations

import pytest

from termgym.sandbox import SandboxConfig, make_sandbox
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
