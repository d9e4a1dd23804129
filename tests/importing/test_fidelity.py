"""Importer fidelity: what a test script's lines are, the release a stand-in keeps, the
files a task names but lacks, and which tasks a --path lists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from termgym.errors import ImportRefused
from termgym.importing import import_tasks
from termgym.importing._script import plan_script

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"

HARBOR_TEMPLATE_TAIL = """
# Install uv
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh

source $HOME/.local/bin/env

uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.mark.parametrize(
    "comment",
    [
        "# Install curl and gcc (gcc needed for compiling new.c in tests)",  # extract-elf
        "# Install curl and git",  # merge-diff-arc-agi-task
        "# Install curl if not already available",  # modernize-scientific-stack
        "    # curl https://example.com/x | sh, wget too",
    ],
)
def test_a_comment_is_not_a_command(comment: str) -> None:
    script = f"#!/bin/bash\n\n{comment}\napt-get update\napt-get install -y curl gcc\n"
    plan = plan_script(script + HARBOR_TEMPLATE_TAIL, "t", "tests/test.sh")
    assert plan.protection == "clean", plan.why
    assert plan.apt == ("curl", "gcc")
    assert comment in plan.script  # kept as written, run as the comment it is


def test_a_comment_after_a_command_is_not_part_of_it() -> None:
    script = "apt-get install -y jq  # and curl, wget https://x.example later\n" + (
        HARBOR_TEMPLATE_TAIL
    )
    plan = plan_script(script, "t", "tests/test.sh")
    assert plan.apt == ("jq",) and plan.protection == "clean"


def test_a_hash_inside_quotes_or_a_word_is_not_a_comment() -> None:
    with pytest.raises(ImportRefused, match="reaches the network at test time"):
        plan_script('echo "#" ; curl https://example.com/x\n', "t", "tests/test.sh")
    with pytest.raises(ImportRefused, match="reaches the network at test time"):
        plan_script("x=a#b curl https://example.com/x\n", "t", "tests/test.sh")


@pytest.mark.parametrize(
    "line",
    [
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y expect curl",
        "DEBIAN_FRONTEND=noninteractive TZ=UTC apt-get install -y expect curl",
        "sudo apt-get install -y expect curl > /dev/null 2>&1",
        "env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y expect curl",
    ],
)
def test_an_install_behind_variables_is_an_install(line: str) -> None:
    plan = plan_script(f"#!/bin/bash\n# Install curl\n{line}\n{HARBOR_TEMPLATE_TAIL}", "t", "x")
    assert plan.protection == "clean", plan.why
    assert plan.apt == ("expect", "curl")
    assert any("moved to build time" in note for note in plan.notes)
    assert "apt-get" not in plan.script


def test_pip_behind_a_variable_is_an_install() -> None:
    plan = plan_script("PIP_NO_CACHE_DIR=1 pip install requests==2.32.5\npytest -rA\n", "t", "x")
    assert plan.pip == ("requests==2.32.5", "pytest") and plan.protection == "clean"


def test_two_exit_code_tests_in_one_if_are_plain_shell() -> None:
    script = (
        "pytest /tests/a.py -rA\nA=$?\npytest /tests/b.py -rA\nB=$?\n"
        "if [ $A -eq 0 ] && [ $B -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nfi\n"
    )
    assert plan_script(script, "t", "x").protection == "clean"


@pytest.mark.parametrize(
    ("image", "stand_in"),
    [
        ("python:3.13-slim-bookworm", "python-3.13-bookworm"),  # 41 TB 2.0 tasks
        ("python:3.13-slim-bookworm@sha256:9d7f", "python-3.13-bookworm"),
        ("ghcr.io/laude-institute/t-bench/python-3-13:20250620", "python-3.13-bookworm"),
        ("python:3.10-slim-bookworm", "python-3.10-bookworm"),  # Terminal-Bench's mteb tasks
        ("python:3.11-slim", "python-3.11-trixie"),  # python.org's default release today
        ("python:3.11", "python-3.11-trixie-full"),
        ("python:3.12.4-slim-bullseye", "python-3.12-bullseye"),
        ("debian:bullseye-slim", "debian-11"),
        ("debian:13.0-slim", "debian-13"),
        ("debian:bookworm-20240101-slim", "debian-12"),
        ("ubuntu:22.04", "ubuntu-22.04"),
        ("ubuntu:24.04", "ubuntu-24.04"),
    ],
)
def test_a_stand_in_keeps_the_release_its_tag_names(image: str, stand_in: str) -> None:
    from termgym.images._localbases import map_base

    mapping = map_base(image)
    assert mapping is not None and mapping.base.name == stand_in


def test_an_unknown_base_is_not_guessed() -> None:
    from termgym.images._localbases import map_base

    for image in ("python:3.9-slim", "python:3.14", "python:3.13-alpine", "debian:buster"):
        assert map_base(image) is None, image


def test_a_python_stand_in_compiles_cpython_into_usr_local_as_python_orgs_image() -> None:
    from termgym.images._localbases import BASES, CPYTHONS, map_base, stand_in_dockerfile

    base = BASES["python-3.13-bookworm"]
    assert base.suite == "bookworm" and base.cpython == CPYTHONS["3.13"]
    text = stand_in_dockerfile(base, "rootfs:x")
    assert CPYTHONS["3.13"].sha256 in text and "sha256sum -c" in text
    assert CPYTHONS["3.13"].url.startswith("http://deb.debian.org/debian/pool/")
    assert 'ln -sfT "$name" "/usr/local/bin/${name%3}"' in text  # python, pip, as there
    assert "PIP_IGNORE_INSTALLED" not in text  # nothing of Debian's in /usr/local to step on
    assert "nice -n 10 make" in text
    full = stand_in_dockerfile(BASES["python-3.11-trixie-full"], "rootfs:x")
    assert "build-essential" in full and "build-essential" not in text
    assert base.recipe() != BASES["python-3.13-trixie"].recipe()
    mapping = map_base("python:3.13-slim-bookworm")
    assert mapping is not None
    differences = mapping.differences()
    assert "CPython 3.13.5 compiled into /usr/local" in differences
    assert "python3 with pip and venv at /usr/bin" in differences


def test_the_stand_in_and_its_differences_are_in_the_provenance(tmp_path: Path) -> None:
    task = tmp_path / "src" / "tb-weight-limit"
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", task)
    dockerfile = task / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().replace(
            "FROM python:3.13-slim-bookworm\n",
            "FROM python:3.13-slim-bookworm\n"
            "COPY --from=ghcr.io/astral-sh/uv:0.8.15 /uv /uvx /bin/\n",
        )
    )
    (done,) = import_tasks([task], tmp_path / "out", "terminal-bench").converted
    spec = yaml.safe_load((done.folder / "task.yaml").read_text())
    provenance = spec["provenance"]
    assert "tb-python-3.13-bookworm" in provenance["image_mapping"]
    assert "(debian bookworm by debootstrap; CPython 3.13.5" in provenance["image_mapping"]
    assert any("stands in as python-3.13-bookworm" in a for a in provenance["approximate"])
    built = (done.folder / "environment" / "Dockerfile").read_text()
    stage = "termgym-uv-0.8.15"
    assert f"AS {stage}\n" in built and "uv==0.8.15" in built
    assert f"COPY --from={stage} /uv /uvx /bin/" in built
    assert built.index(f"AS {stage}") < built.index(f"COPY --from={stage}")


def _task_with(tmp_path: Path, dockerfile: str, files: dict[str, bytes]) -> Path:
    task = tmp_path / "src" / "tb-weight-limit"
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", task)
    (task / "Dockerfile").write_text(dockerfile)
    (task / "overlay.yaml").unlink()  # its files are not copied by these Dockerfiles
    for name, data in files.items():
        (task / name).parent.mkdir(parents=True, exist_ok=True)
        (task / name).write_bytes(data)
    return task


def test_a_file_the_dockerfile_copies_but_the_folder_lacks_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    task = _task_with(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY weights.pt /app/\n", {})
    report = import_tasks([task], tmp_path / "out", "terminal-bench")
    ((_, why),) = report.refused
    assert "files its image needs are missing" in why
    assert "weights.pt (the Dockerfile's line 3 copies it into the image)" in why


def test_git_lfs_pointers_and_files_with_only_a_checksum_are_missing(tmp_path: Path) -> None:
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 10\n"
    task = _task_with(
        tmp_path,
        "FROM ubuntu:24.04\nWORKDIR /app\nCOPY vendor /app/vendor\nCOPY model.bin /app/\n",
        {"vendor/src.tar.gz.sha256": b"00  src.tar.gz\n", "model.bin": pointer},
    )
    report = import_tasks([task], tmp_path / "out", "terminal-bench")
    ((_, why),) = report.refused
    assert "vendor/src.tar.gz (src.tar.gz.sha256 is its checksum)" in why
    assert "model.bin (a Git LFS pointer: the content was not fetched)" in why


def test_a_tests_file_the_tests_read_but_the_folder_lacks_is_reported(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    task = _task_with(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n", {})
    tests = task / "tests" / "test_outputs.py"
    tests.write_text(
        tests.read_text()
        + '\n\ndef test_truth():\n    assert open("/tests/gtruth.pt", "rb").read()\n'
        + '\n\ndef test_built():\n    open("/tests/probe.c").close()  # probe is compiled\n'
        + '\n\ndef test_compiled():\n    assert open("/tests/probe", "rb")\n'
    )
    (tests.parent / "probe.c").write_text("int main(void) { return 0; }\n")
    result = CliRunner().invoke(main, ["import", "tb", str(task), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "1 missing" in result.output
    assert "missing: tests/gtruth.pt (tests/test_outputs.py line" in result.output
    assert "reads /tests/gtruth.pt)" in result.output
    assert "tests/probe " not in result.output  # made from probe.c at test time
    spec = yaml.safe_load((tmp_path / "out" / "tb-weight-limit" / "task.yaml").read_text())
    assert any("missing from its folder: tests/gtruth.pt" in a
               for a in spec["provenance"]["approximate"])  # fmt: skip


def test_tasks_with_a_path_lists_only_the_tasks_found_there(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", tmp_path / "tasks" / "tb-weight-limit")
    listed = CliRunner().invoke(main, ["tasks", "--path", str(tmp_path / "tasks")])
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.output.splitlines()] == ["tb-weight-limit"]
    everything = CliRunner().invoke(main, ["tasks"])
    ids = [line.split()[0] for line in everything.output.splitlines() if line.strip()]
    assert "fuel-planner" in ids and "tb-weight-limit" not in ids
    helped = " ".join(CliRunner().invoke(main, ["tasks", "--help"]).output.split())
    assert "the tasks under the --path folders when any is given (and only those)" in helped
