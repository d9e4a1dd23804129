"""Importing Terminal-Bench and Harbor task folders: conversion, quirks, refusals, overlays.

No sandbox here: conversions are file work. The fixtures under tests/fixtures/foreign are
written for termgym, in the layouts both harnesses use (with their quirks)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from termgym.errors import ImportRefused, TaskError, TaskSpecError
from termgym.importing import import_tasks, normalize_id, read_foreign, suggest_overlay
from termgym.importing._dockerfile import destination
from termgym.importing._script import plan_script
from termgym.tasks import RuleDraw, instantiate, load_task

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
TB = FOREIGN / "tb" / "tb-weight-limit"
HARBOR = FOREIGN / "harbor" / "harbor-weight-limit"


@pytest.fixture
def copy(tmp_path: Path):
    def make(source: Path, name: str | None = None) -> Path:
        target = tmp_path / "src" / (name or source.name)
        shutil.copytree(source, target)
        return target

    return make


def test_tb_task_converts_with_its_provenance_and_verbatim_instruction(tmp_path: Path) -> None:
    report = import_tasks([TB], tmp_path / "out", "terminal-bench")
    assert not report.refused
    task = load_task(tmp_path / "out" / "tb-weight-limit")
    prov = task.spec.provenance
    assert prov is not None and prov.format == "terminal-bench"
    assert prov.original_id == "tb-weight-limit" and prov.difficulty == "easy"
    assert prov.tags == ["csv", "policy"] and prov.protection == "clean"
    assert "python:3.13-slim-bookworm -> termgym/tb-python-3.13-bookworm:" in prov.image_mapping
    plan = instantiate(task, "original")
    assert "{{ parcel }}" in plan.instruction  # shown verbatim, not a template
    assert plan.instruction == yaml.safe_load((TB / "task.yaml").read_text())["instruction"]
    assert task.spec.limits.agent_timeout == 300 and task.spec.limits.grading_timeout == 60


def test_tb_boilerplate_installs_move_to_build_time_and_pytest_is_rewritten(
    tmp_path: Path,
) -> None:
    import_tasks([TB], tmp_path, "terminal-bench")
    script = (tmp_path / "tb-weight-limit" / "graders" / "run-tests.sh").read_text()
    assert "$TERMGYM_PYTEST $TEST_DIR/test_outputs.py -rA" in script
    assert "astral.sh" not in script and "uv add" not in script and "apt-get" not in script
    dockerfile = (tmp_path / "tb-weight-limit" / "environment" / "Dockerfile").read_text()
    assert dockerfile.startswith("FROM termgym/tb-python-3.13-bookworm:")
    assert "pip install --no-cache-dir --break-system-packages pytest==8.4.1" in dockerfile
    # as the script's own line installed it: with apt's Recommends (gcc's bring libc6-dev)
    assert "apt-get install -y curl && rm -rf /var/lib/apt/lists/*" in dockerfile
    assert "COPY termgym-ca.pem /etc/termgym/ca-bundle.pem" in dockerfile
    assert not (tmp_path / "tb-weight-limit" / "environment" / "tests").exists()
    assert not (tmp_path / "tb-weight-limit" / "environment" / "solution.sh").exists()


def test_harbor_quirks_are_accepted(tmp_path: Path) -> None:
    assert not (HARBOR / "tests" / "test.sh").stat().st_mode & 0o111  # no run bit
    assert not (HARBOR / "solution" / "solve.sh").read_text().startswith("#!")
    foreign = read_foreign(HARBOR)
    assert foreign.memory_mb == 2048  # legacy memory = "2G"
    assert foreign.docker_image and foreign.dockerfile  # both: the Dockerfile is built
    report = import_tasks([HARBOR], tmp_path, "harbor")
    assert not report.refused
    task = load_task(tmp_path / "harbor-weight-limit")
    grader = task.spec.graders[0]
    assert grader.params["verdict"] == "harbor-reward"
    assert grader.params["script_at"] == "/tests/test.sh"
    assert (
        "$TERMGYM_PYTEST /tests/test_outputs.py -rA"
        in (tmp_path / "harbor-weight-limit" / "graders" / "run-tests.sh").read_text()
    )


@pytest.mark.parametrize(
    ("declared", "disk_mb"),
    [("storage_mb = 20480", 20480), ('storage = "5G"', 5120), ("", 10240)],
    ids=["storage_mb", "legacy-storage", "none"],
)
def test_the_disk_a_harbor_task_declares_is_the_disk_it_gets(
    tmp_path: Path, copy, declared: str, disk_mb: int
) -> None:
    """Harbor's `[environment] storage_mb` (Terminal-Bench 2.0's tasks declare 10 to 20 GB:
    model weights, toolchains) is the imported task's `limits.disk_mb`; every task got 4096
    before, and one that needed more failed on termgym alone. One that declares none gets
    Harbor's default, 10240 (it got 4096, termgym's default for Terminal-Bench's)."""
    source = copy(HARBOR)
    toml = source / "task.toml"
    text = toml.read_text().replace('storage = "10G"\n', "")  # the fixture's own
    toml.write_text(text.replace("[environment]\n", f"[environment]\n{declared}\n"))
    assert read_foreign(source).disk_mb == disk_mb
    report = import_tasks([source], tmp_path / "out", "harbor")
    (done,) = report.converted
    assert load_task(done.folder).spec.limits.disk_mb == disk_mb


@pytest.mark.parametrize(("declared", "cpus"), [("cpus = 4", 4.0), ("", 1.0)], ids=["4", "none"])
def test_the_cores_a_harbor_task_declares_are_the_cores_it_gets(
    tmp_path: Path, copy, declared: str, cpus: float
) -> None:
    """Harbor gives the container `[environment] cpus` cores (compose's `cpus` limit; five
    of Terminal-Bench 2.0's tasks declare 2 or 4: compilers, Stan); termgym gave every
    imported task one, so a build-heavy task ran at a quarter of its speed against its
    timeout. Past the host's cores, the sandbox gets all of them (docker refuses more)."""
    from termgym.env._episode import sandbox_config

    source = copy(HARBOR)
    toml = source / "task.toml"
    text = toml.read_text().replace("cpus = 1\n", "")  # the fixture's own
    toml.write_text(text.replace("[environment]\n", f"[environment]\n{declared}\n"))
    assert read_foreign(source).cpus == cpus
    (done,) = import_tasks([source], tmp_path / "out", "harbor").converted
    task = load_task(done.folder)
    assert task.spec.limits.cpus == cpus
    assert sandbox_config(task, image="x").cpus == min(cpus, float(os.cpu_count() or 1))
    toml.write_text(text.replace("[environment]\n", '[environment]\ncpus = "lots"\n'))
    with pytest.raises(TaskSpecError, match=r"\[environment\]\.cpus: expected cores > 0"):
        read_foreign(source)


@pytest.mark.parametrize(
    ("declared", "network", "noted"),
    [
        ('network_mode = "no-network"', False, ""),
        ("allow_internet = false", False, ""),
        ('network_mode = "public"\nallow_internet = false', True, ""),
        ('allowed_hosts = ["pypi.org"]', True, "the whole network, not only those hosts"),
        ("", True, ""),
    ],
    ids=["no-network", "allow_internet", "mode-first", "allowlist", "none"],
)
def test_the_network_a_harbor_task_declares_is_the_network_it_gets(
    tmp_path: Path, copy, declared: str, network: bool, noted: str
) -> None:
    """Harbor's `network_mode` (which its newer tasks use in place of `allow_internet`)
    decides the agent's network: `no-network` was ignored, and such a task had one."""
    source = copy(HARBOR)
    toml = source / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", f"[environment]\n{declared}\n"))
    task = read_foreign(source)
    assert task.network is network
    notes = [a for a in task.approximate if "network" in a]
    assert noted in notes[0] if noted else not notes


def test_harbor_keys_termgym_cannot_honour_or_does_not_know_are_noted(tmp_path: Path, copy) -> None:
    """A key Harbor acts on that termgym does not ([solution.env], [agent].user ...) or one
    Harbor's model does not define was dropped without a word; each is now in
    provenance.approximate, and the task still imports."""
    source = copy(HARBOR)
    toml = source / "task.toml"
    toml.write_text(
        toml.read_text().replace("[agent]\n", '[agent]\nuser = "agent"\n')
        + '\n[solution.env]\nSEED = "7"\n[extras]\nx = 1\n'
    )
    (done,) = import_tasks([source], tmp_path / "out", "harbor").converted
    approximate = "\n".join(done.approximate)
    assert "[agent].user = 'agent': the agent runs as root" in approximate
    assert "[solution].env sets 1 variable(s): the oracle runs without" in approximate
    assert "SEED" not in approximate
    assert "does not define are ignored: extras" in approximate


def test_ids_are_normalized_and_the_original_kept(tmp_path: Path, copy) -> None:
    source = copy(TB, "Weird_Task.Name")
    report = import_tasks([source], tmp_path / "out", "terminal-bench")
    (done,) = report.converted
    assert done.task_id == "weird-task-name" == normalize_id("Weird_Task.Name")
    task = load_task(done.folder)
    assert task.spec.provenance is not None
    assert task.spec.provenance.original_id == "Weird_Task.Name"


def test_multi_service_compose_is_refused_with_the_reason(tmp_path: Path, copy) -> None:
    source = copy(TB)
    (source / "docker-compose.yaml").write_text(
        "services:\n  client:\n    build: {dockerfile: Dockerfile}\n  db:\n    image: postgres\n"
    )
    report = import_tasks([source], tmp_path / "out", "terminal-bench")
    assert not report.converted
    assert "2 services (client, db)" in report.refused[0][1]


def test_the_compose_services_workdir_and_environment_are_the_tasks(tmp_path: Path, copy) -> None:
    """Terminal-Bench tasks set their container's working folder and variables in the
    compose service (TB 2.0 notes `moved_workdir_from_compose_to_dockerfile` for two): they
    were dropped, so the agent started in the Dockerfile's WORKDIR without the variables.
    The harness's own entries (TEST_DIR=${T_BENCH_TEST_DIR}, its image, command and log
    mounts) stay termgym's; what termgym cannot apply is noted as approximate."""
    source = copy(TB)
    (source / "overlay.yaml").unlink()  # its files are copied into /app, the workdir no more
    (source / "docker-compose.yaml").write_text(
        "services:\n  client:\n    build: {dockerfile: Dockerfile}\n"
        "    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}\n"
        '    command: ["sh", "-c", "sleep infinity"]\n'
        "    working_dir: /srv/parcels\n    mem_limit: 4g\n"
        "    environment:\n      - TEST_DIR=${T_BENCH_TEST_DIR}\n"
        '      - PARCEL_MODE=strict "v2"\n      - API_KEY=${API_KEY}\n'
    )
    (done,) = import_tasks([source], tmp_path / "out", "terminal-bench").converted
    task = load_task(done.folder)
    assert task.spec.workdir == "/srv/parcels"
    dockerfile = (done.folder / "environment" / "Dockerfile").read_text()
    assert dockerfile.endswith('ENV PARCEL_MODE="strict \\"v2\\""\n')
    assert "TEST_DIR" not in dockerfile and "API_KEY" not in dockerfile
    approximate = "\n".join(done.approximate)
    assert "environment API_KEY=${API_KEY}: a value from the host's environment" in approximate
    assert "service client's mem_limit is not applied" in approximate


def test_a_dockerfile_that_ends_as_another_user_is_noted(tmp_path: Path, copy) -> None:
    """Both harnesses run the agent as the image's USER; termgym runs it as root. The
    Dockerfile's USER was dropped without a word; it is noted as approximate now."""
    source = copy(HARBOR)
    dockerfile = source / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN useradd -m app\nUSER app\n")
    (done,) = import_tasks([source], tmp_path / "out", "harbor").converted
    assert any(a.startswith("the Dockerfile's last USER is app:") for a in done.approximate)
    dockerfile.write_text(dockerfile.read_text() + "USER root\n")
    (again,) = import_tasks([source], tmp_path / "out2", "harbor").converted
    assert not any("USER" in a for a in again.approximate)


def test_unknown_base_image_is_refused(tmp_path: Path, copy) -> None:
    source = copy(TB)
    (source / "Dockerfile").write_text("FROM swebench/sweb.eval.x86_64.astropy:latest\n")
    with pytest.raises(ImportRefused, match="no image registry answers here"):
        from termgym.importing import convert

        convert(read_foreign(source), tmp_path)


def test_prebuilt_harbor_image_without_dockerfile_is_refused(tmp_path: Path, copy) -> None:
    source = copy(HARBOR)
    (source / "environment" / "Dockerfile").unlink()
    report = import_tasks([source], tmp_path / "out", "harbor")
    assert "cannot be pulled" in report.refused[0][1]


def test_network_at_test_time_is_refused() -> None:
    script = "#!/bin/bash\ngit clone https://github.com/google/googletest.git\npytest /tests\n"
    with pytest.raises(ImportRefused, match="line 2 reaches the network at test time"):
        plan_script(script, "t", "run-tests.sh")


def test_a_script_that_runs_the_agents_programs_runs_as_the_agents_user() -> None:
    plan = plan_script((FOREIGN / "tb/tb-greeting-summary/run-tests.sh").read_text(), "t", "x")
    assert plan.protection == "agent-user"
    assert "bash /app/greet.sh" in plan.why


def test_other_parsers_are_refused(copy) -> None:
    source = copy(TB)
    spec = yaml.safe_load((source / "task.yaml").read_text())
    spec["parser_name"] = "swebench"
    (source / "task.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(ImportRefused, match="pytest parser only"):
        read_foreign(source)


def test_same_shell_is_marked_approximate_saying_why(tmp_path: Path) -> None:
    report = import_tasks([FOREIGN / "tb" / "tb-greeting-summary"], tmp_path, "terminal-bench")
    (done,) = report.converted
    assert any("run_tests_in_same_shell" in a for a in done.approximate)
    assert done.protection == "agent-user"


def test_keystroke_solution_replays_through_a_terminal(tmp_path: Path) -> None:
    import_tasks([FOREIGN / "tb" / "tb-greeting-summary"], tmp_path, "terminal-bench")
    oracle = (tmp_path / "tb-greeting-summary" / "solution" / "oracle.sh").read_text()
    assert "tmux send-keys" in oracle and "chmod +x /app/greet.sh" in oracle


def test_overlay_variants_rewrite_visible_files_tests_and_oracle(tmp_path: Path) -> None:
    import_tasks([TB], tmp_path, "terminal-bench")
    task = load_task(tmp_path / "tb-weight-limit")
    assert task.spec.variants == ["original", "contradicted", "withheld", "sampled"]
    plan = instantiate(task, "contradicted", seed=1, draw=RuleDraw(contradict="fixed"))
    assert "no more than 150 kg" in plan.instruction
    assert b'"max_weight": 150' in plan.files["policy.json"]
    assert "LIMIT=150" in plan.solution("oracle")
    assert "LIMIT=100" in plan.solution("memorized")
    rewrite = task.spec.graders[0].params["rewrite"]
    assert [r["file"] for r in rewrite] == ["tests/test_outputs.py"]
    withheld = instantiate(task, "withheld")
    assert "100" not in withheld.instruction and "within the dock's limit" in withheld.instruction
    assert b'"max_weight": null' in withheld.files["policy.json"]
    sampled = instantiate(task, "sampled", seed=3)
    assert sampled.rules_enforced["max_weight"] in (150, 200, 250)
    drawn = instantiate(task, "contradicted", seed=3)  # drawn per episode by default
    value = drawn.rules_enforced["max_weight"]
    assert value != 100 and f"no more than {value} kg" in drawn.instruction
    assert f"LIMIT={value}" in drawn.solution("oracle")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("no more than 999 kg", "found it 0 time"),
        ("kg", "found it 2 time"),
        ("dock policy", "hold rule max_weight's original value '100' once"),
    ],
)
def test_overlay_errors_name_the_file_and_the_pattern(
    tmp_path: Path, copy, pattern: str, message: str
) -> None:
    source = copy(TB)
    overlay = yaml.safe_load((source / "overlay.yaml").read_text())
    overlay["rules"]["max_weight"]["occurs"][0]["pattern"] = pattern
    (source / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    import_tasks([source], tmp_path / "out", "terminal-bench")
    with pytest.raises(TaskSpecError, match=message) as info:
        load_task(tmp_path / "out" / "tb-weight-limit")
    assert "instruction" in str(info.value) and repr(pattern) in str(info.value)


def test_overlay_rules_that_overlap_are_an_error(tmp_path: Path, copy) -> None:
    source = copy(TB)
    overlay = yaml.safe_load((source / "overlay.yaml").read_text())
    overlay["rules"]["unit_weight"] = {
        "original": 100,
        "choices": [7],
        "occurs": [{"file": "instruction", "pattern": "more than 100"}],
    }
    (source / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    import_tasks([source], tmp_path / "out", "terminal-bench")
    with pytest.raises(TaskSpecError, match="overlap"):
        load_task(tmp_path / "out" / "tb-weight-limit")


def test_overlay_on_a_file_the_dockerfile_does_not_copy_is_an_error(tmp_path: Path, copy) -> None:
    source = copy(TB)
    (source / "notes.txt").write_text("limit 100 kg\n")
    overlay = yaml.safe_load((source / "overlay.yaml").read_text())
    overlay["rules"]["max_weight"]["occurs"].append({"file": "notes.txt", "pattern": "limit 100"})
    (source / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    report = import_tasks([source], tmp_path / "out", "terminal-bench")
    assert "copied nowhere" in report.refused[0][1]


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("COPY tests/check.py /app", "/app/check.py"),  # the WORKDIR: a folder already
        ("COPY tests/check.py .", "/app/check.py"),
        ("COPY tests/check.py /", "/check.py"),
        ("COPY tests/check.py /app/", "/app/check.py"),
        ("COPY tests/check.py /app/run.py", "/app/run.py"),  # a file's new name
        ("COPY tests/check.py /app/lib", "/app/lib"),  # not known to be a folder: Docker's name
        ("COPY tests /app/tests", "/app/tests/check.py"),
    ],
)
def test_a_copy_into_a_folder_that_exists_keeps_the_files_name(line: str, where: str) -> None:
    dockerfile = f"FROM debian:bookworm\nWORKDIR /app\n{line}\n"
    assert destination(dockerfile, "tests/check.py") == where


def _files_as_written(folder: Path, backdate: bool = False) -> dict[str, tuple[int, int]]:
    """Every file below `folder` with its inode and modification time. `backdate` first sets
    each one's time to 1970, so a file written again after (or replaced) shows today's."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    for path in files if backdate else ():
        os.utime(path, ns=(0, 0))
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in files}


def test_foreign_folders_on_the_path_convert_on_the_fly_and_are_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copy
) -> None:
    from termgym.tasks import get_task, task_dirs

    monkeypatch.setenv("TERMGYM_CACHE", str(tmp_path / "cache"))
    source = copy(TB).parent
    copy(HARBOR)
    dirs = task_dirs([source])
    assert {"tb-weight-limit", "harbor-weight-limit"} <= set(dirs)
    written = _files_as_written(tmp_path / "cache", backdate=True)
    assert task_dirs([source])["tb-weight-limit"] == dirs["tb-weight-limit"]
    assert _files_as_written(tmp_path / "cache") == written  # cached: no conversion again
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(source))
    assert get_task("harbor-weight-limit").spec.provenance is not None


def test_cli_import_and_check_folder(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    result = CliRunner().invoke(main, ["import", "tb", str(FOREIGN / "tb"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "3 imported, 0 refused" in result.output
    bad = CliRunner().invoke(
        main, ["import", "harbor", str(FOREIGN / "tb"), "--out", str(tmp_path)]
    )
    assert bad.exit_code != 0 and "expected" in bad.output


def test_overlay_suggest_finds_the_rule_in_instruction_tests_and_solution() -> None:
    found = suggest_overlay(TB)
    # 100 is too common to propose by itself, but the instruction states it, the tests
    # check it and the solution hard-codes it: that is the rule, proposed first.
    assert found[0].value == 100
    assert {"instruction", "tests/test_outputs.py", "solution.sh"} <= {
        f for f, _ in found[0].occurs
    }
    assert ("solution.sh", "LIMIT=100") in found[0].occurs
    assert 0 not in {s.value for s in found}  # common numbers the instruction never states


def test_overlay_suggest_proposes_unique_patterns(tmp_path: Path, copy) -> None:
    source = copy(HARBOR)
    text = (source / "instruction.md").read_text().replace("100 kg", "120 kg")
    (source / "instruction.md").write_text(text)
    tests = source / "tests" / "test_outputs.py"
    tests.write_text(tests.read_text().replace("MAX_WEIGHT = 100", "MAX_WEIGHT = 120"))
    (found,) = [s for s in suggest_overlay(source) if s.value == 120]
    files = {f for f, _ in found.occurs}
    assert {"instruction", "tests/test_outputs.py"} <= files
    for file, pattern in found.occurs:
        text = (
            (source / "instruction.md").read_text()
            if file == "instruction"
            else ((source / file).read_text())
        )
        assert text.count(pattern) == 1


@pytest.mark.parametrize(
    "file", ["instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"]
)
def test_a_task_file_that_is_not_utf8_is_refused_naming_it(tmp_path: Path, copy, file: str) -> None:
    """Such a file ended the whole import in a UnicodeDecodeError traceback (the tasks after
    it were never read); it refuses that task alone, naming the file and the byte."""
    good = copy(HARBOR)
    broken = copy(HARBOR, "latin1")
    (broken / file).write_bytes((broken / file).read_bytes() + b"\xe9t\xe9\n")
    report = import_tasks([good.parent], tmp_path / "out", "harbor")
    assert [c.task_id for c in report.converted] == ["harbor-weight-limit"]
    ((folder, why),) = report.refused
    assert folder == broken and why.startswith(f"{broken / file}: expected UTF-8 text, found byte")


def test_a_folder_without_tasks_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(TaskError, match=r"to be a Harbor task \(task.toml, instruction.md\) or"):
        import_tasks([tmp_path], tmp_path / "out", "harbor")


def test_a_task_folder_missing_a_file_is_refused_saying_what_it_lacks(tmp_path: Path, copy) -> None:
    """A task of a collection without its task.toml (or instruction.md) was left out of the
    import without a word, as if it were not a task; alone, it was 'holds no task'. It is
    refused now, naming the file it lacks, beside the tasks that import."""
    good = copy(HARBOR)
    broken = copy(HARBOR, "no-toml")
    (broken / "task.toml").unlink()
    report = import_tasks([good.parent], tmp_path / "out", "harbor")
    assert [c.task_id for c in report.converted] == ["harbor-weight-limit"]
    ((folder, why),) = report.refused
    assert folder == broken
    assert why.endswith("expected task.toml and instruction.md, found only instruction.md")
    (broken / "instruction.md").unlink()
    (broken / "task.toml").write_text("")
    alone = import_tasks([broken], tmp_path / "out2", "harbor")
    assert "expected task.toml and instruction.md, found only task.toml" in alone.refused[0][1]


def test_tests_that_reach_a_service_from_a_shell_script_grade_live(tmp_path: Path, copy) -> None:
    """A pytest module that only starts `bash /tests/verify.sh`, whose script reaches the
    agent's server on localhost (TB 2.0's configure-git-webserver), grades while the agent's
    processes still run; the same task without it grades a stopped sandbox."""
    source = copy(FOREIGN / "harbor" / "harbor-top-words")
    import_tasks([source], tmp_path / "before", "harbor")
    assert load_task(tmp_path / "before" / "harbor-top-words").spec.grading.mode == "clean"
    (source / "tests" / "verify.sh").write_text(
        "#!/bin/bash\ncurl -s http://localhost:8080/hello.html\n"
    )
    import_tasks([source], tmp_path / "after", "harbor")
    assert load_task(tmp_path / "after" / "harbor-top-words").spec.grading.mode == "live"


def test_moved_installs_keep_the_scripts_recommends_choice(tmp_path: Path, copy) -> None:
    source = copy(TB)
    script = source / "run-tests.sh"
    text = script.read_text()
    assert "apt-get install -y curl" in text
    script.write_text(
        text.replace("apt-get install -y curl", "apt-get install -y --no-install-recommends curl")
    )
    import_tasks([source], tmp_path / "out", "terminal-bench")
    dockerfile = (tmp_path / "out" / "tb-weight-limit" / "environment" / "Dockerfile").read_text()
    assert "apt-get install -y --no-install-recommends curl &&" in dockerfile


def test_a_harbor_tag_given_as_one_name_is_one_tag(tmp_path: Path, copy) -> None:
    """`tags = "csv"` became the tags c, s and v."""
    source = copy(HARBOR)
    toml = source / "task.toml"
    toml.write_text(toml.read_text().replace('tags = ["csv", "policy"]', 'tags = "csv"'))
    assert read_foreign(source).tags == ("csv",)
