"""What a real test script becomes, and which tasks may run their pytest as root.

Terminal-Bench's and Harbor's own boilerplate (uv's venv and its activation, `uvx -w`, the
comment that names curl) must import `clean`; tests that load the agent's code into the
test process must not. No sandbox here."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from termgym.check import tasks_to_check
from termgym.errors import ImportRefused
from termgym.importing import import_tasks, read_foreign
from termgym.importing._convert import _state_paths
from termgym.importing._inprocess import in_process_code
from termgym.importing._script import plan_script
from termgym.tasks import load_task

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
TB_MODULE = FOREIGN / "tb" / "tb-solution-module"
HARBOR_WORDS = FOREIGN / "harbor" / "harbor-top-words"


def test_terminal_benchs_canonical_script_is_clean_and_drops_its_venv() -> None:
    plan = plan_script((TB_MODULE / "run-tests.sh").read_text(), "t", "run-tests.sh")
    assert plan.protection == "clean", plan.why
    assert "$TERMGYM_PYTEST $TEST_DIR/test_outputs.py -rA" in plan.script
    assert "activate" not in plan.script and "uv venv" not in plan.script
    assert plan.apt == ("curl",) and plan.pip == ("pytest==8.4.1", "pytest")
    assert any("`source .tbench-testing/bin/activate` dropped" in n for n in plan.notes)


def test_a_comment_naming_curl_is_not_a_network_call() -> None:
    script = "#!/bin/bash\n# Install curl, then fetch nothing\ncd /app\npython3 run.py\n"
    plan = plan_script(script, "t", "run-tests.sh")
    assert plan.protection == "agent-user"  # it runs the agent's run.py, and is not refused


def test_a_heredoc_script_that_fetches_is_still_refused() -> None:
    script = "#!/bin/bash\ncat > fetch.sh <<'EOF'\ncurl https://example.com/x\nEOF\nbash fetch.sh\n"
    with pytest.raises(ImportRefused, match="reaches the network at test time"):
        plan_script(script, "t", "run-tests.sh")


def test_activating_a_venv_the_script_did_not_drop_keeps_it_agent_user() -> None:
    plan = plan_script("source /app/.agent-env/bin/activate\npytest -rA\n", "t", "run-tests.sh")
    assert plan.protection == "agent-user" and "activate" in plan.why


@pytest.mark.parametrize(
    "line",
    [
        "pytest /tests/test_outputs.py -rA && bash /app/cleanup.sh",
        "pytest /tests/test_outputs.py -rA; python3 /app/report.py",
        "pytest /tests/test_outputs.py -rA | tee /logs/verifier/out.txt",
        "python -m pytest -rA $(cat /app/args)",
        "pytest -rA `cat /app/args`",
        "pytest -rA > /app/out.txt",
        "export LD_PRELOAD=/app/libx.so\npytest -rA",
        "BASH_ENV=/app/env.sh\npytest -rA",
        "export PATH=/app/bin:$PATH\npytest -rA",
        "export PYTHONSTARTUP=/app/x.py\npytest -rA",
    ],
)
def test_what_follows_pytest_on_its_line_keeps_the_script_agent_user(line: str) -> None:
    """The pytest line becomes termgym's pytest, run as root in a clean script: what else
    its line runs (another command, a pipe, a substitution) would run as root, unread."""
    plan = plan_script(f"#!/bin/bash\n{line}\n", "t", "tests/test.sh")
    assert plan.protection == "agent-user", plan.script


def test_harbors_uvx_template_is_clean_and_its_packages_move_to_build_time() -> None:
    plan = plan_script((HARBOR_WORDS / "tests" / "test.sh").read_text(), "t", "tests/test.sh")
    assert plan.protection == "clean", plan.why
    assert "$TERMGYM_PYTEST --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA" in (
        plan.script
    )
    assert set(plan.pip) >= {"pytest==8.4.1", "pytest-json-ctrf==0.3.5"}
    assert "uvx" not in plan.script and "astral.sh" not in plan.script


def test_index_urls_are_not_taken_for_packages() -> None:
    line = "uv pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cpu\n"
    plan = plan_script(line, "t", "run-tests.sh")
    assert plan.pip == ("torch==2.7.0",)
    assert "its --index-url dropped" in plan.notes[0]


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ('sys.path.append("/app")', "puts a folder of the agent's on sys.path"),
        ('spec = spec_from_file_location("s", "/app/s.py")', "imports a module from a file"),
        ('runpy.run_path("/app/main.py")', "runs a module in-process"),
        ("value = eval(Path('/app/out.txt').read_text())", "evaluates text as Python"),
        ('model = pickle.load(open("/app/model.pkl", "rb"))', "unpickles data"),
        ('np.load("/app/x.npy", allow_pickle=True)', "unpickles data"),
        ('torch.load("/app/w.pt", weights_only=False)', "unpickles data"),
        ('mlflow.sklearn.load_model("models:/m/1")', "loads a pickled model"),
        ('os.chdir("/app")\nfrom eigen import top', "imports from the folder it changed into"),
    ],
)
def test_tests_that_run_the_agents_code_in_process_are_found(
    tmp_path: Path, line: str, what: str
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_outputs.py").write_text(f"import sys\n\n{line}\n")
    assert what in in_process_code(tmp_path / "tests")


@pytest.mark.parametrize(
    "line",
    [
        "sys.path.insert(0, os.path.dirname(__file__))",
        'np.load("/app/dist.npy")',
        "model.eval()",
        'subprocess.run(["python3", "/app/solution.py"])',
        "# sys.path.append('/app') in a comment",
        'def test_x():\n    os.chdir("/app")\n    import json',  # in a test: a folder to run in
        "os.chdir(os.path.dirname(__file__))\nimport helpers",  # the tests' own folder
    ],
)
def test_tests_that_only_start_or_read_the_agents_work_stay_clean(
    tmp_path: Path, line: str
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_outputs.py").write_text(f"import os\n\n{line}\n")
    assert in_process_code(tmp_path / "tests") == ""


def test_a_task_whose_tests_import_the_agents_module_runs_as_the_agents_user(
    tmp_path: Path,
) -> None:
    report = import_tasks([TB_MODULE], tmp_path, "terminal-bench")
    (done,) = report.converted
    assert done.protection == "agent-user"
    task = load_task(done.folder)
    assert task.spec.graders[0].params["protection"] == "agent-user"
    prov = task.spec.provenance
    assert prov is not None
    assert any("inside the test process" in why for why in prov.approximate)
    assert "spec_from_file_location" in (done.folder / "IMPORT-NOTES.txt").read_text()


def test_root_home_paths_the_tests_read_are_state(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_outputs.py").write_text(
        'CONFIG = Path.home() / ".jupyter" / "jupyter_notebook_config.py"\n'
        'RC = os.path.expanduser("~/.config/tool/rc")\n'
    )
    assert _state_paths(tmp_path / "tests", "/app") == ["/root/.config", "/root/.jupyter"]


def test_harbor_solution_helpers_travel_inside_the_oracle(tmp_path: Path) -> None:
    foreign = read_foreign(HARBOR_WORDS)
    assert foreign.solution is not None
    head, _, tail = foreign.solution.partition("# termgym: solution/solve.sh, as written\n")
    assert "cat > /solution/count.py <<'TERMGYM_SOLUTION_FILE'" in head
    assert "counts.most_common(TOP_N)" in head  # as text: an overlay may name it
    assert tail == (HARBOR_WORDS / "solution" / "solve.sh").read_text()


def test_harbors_environment_env_is_not_passed_on(tmp_path: Path) -> None:
    import_tasks([HARBOR_WORDS], tmp_path, "harbor")
    text = (tmp_path / "harbor-top-words" / "task.yaml").read_text()
    assert "SOME_API_KEY" not in text  # [environment.env] may name the host's secrets


def test_multi_step_harbor_tasks_are_refused_saying_why(tmp_path: Path) -> None:
    task = tmp_path / "src" / "plan-execute"
    for step in ("01-plan", "02-implement"):
        (task / "steps" / step / "tests").mkdir(parents=True)
        (task / "steps" / step / "instruction.md").write_text("step\n")
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM python:3.13-slim\n")
    (task / "task.toml").write_text(
        'schema_version = "1.1"\nmulti_step_reward_strategy = "final"\n'
    )
    report = import_tasks([tmp_path / "src"], tmp_path / "out", "harbor")
    assert not report.converted
    ((folder, why),) = report.refused
    assert folder.name == "plan-execute" and "multi-step Harbor task (2 steps" in why


def test_check_with_a_path_and_no_ids_checks_only_the_tasks_found_there(tmp_path: Path) -> None:
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", tmp_path / "tasks" / "tb-weight-limit")
    chosen = tasks_to_check((), [str(tmp_path / "tasks")])
    assert [t.id for t in chosen] == ["tb-weight-limit"]
    everything = {t.id for t in tasks_to_check((), [])}
    assert "fuel-planner" in everything and "tb-weight-limit" not in everything


def test_check_help_says_what_a_path_without_ids_checks() -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    result = CliRunner().invoke(main, ["check", "--help"])
    assert "every task found under the --path folders when any is given (and only those)" in (
        " ".join(result.output.split())
    )


def test_tasks_lists_long_ids_in_one_column(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    import_tasks([TB_MODULE], tmp_path, "terminal-bench")
    spec = yaml.safe_load((tmp_path / "tb-solution-module" / "task.yaml").read_text())
    assert spec["id"] == "tb-solution-module"
    result = CliRunner().invoke(main, ["tasks", "--path", str(tmp_path)])
    lines = [line for line in result.output.splitlines() if line.strip()]
    starts = {re.match(r"\S+\s+", line).end() for line in lines}  # type: ignore[union-attr]
    assert len(starts) == 1, result.output  # the second column lines up


def test_copying_from_an_image_no_registry_serves_is_refused(tmp_path: Path) -> None:
    task = tmp_path / "src" / "tb-weight-limit"
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", task)
    dockerfile = task / "Dockerfile"
    dockerfile.write_text(
        "FROM python:3.13-slim AS build\nRUN true\nFROM python:3.11-slim-bookworm\n"
        "COPY --from=build /etc/hostname /tmp/x\n"
        "COPY --from=ghcr.io/other/tool:1.0 /tool /bin/\nWORKDIR /app\n"
    )
    report = import_tasks([task], tmp_path / "out", "terminal-bench")
    ((_, why),) = report.refused
    assert "COPY --from=ghcr.io/other/tool:1.0: copies from an image" in why


def test_apt_pins_of_the_original_base_are_dropped_on_a_stand_in(tmp_path: Path) -> None:
    task = tmp_path / "src" / "tb-weight-limit"
    shutil.copytree(FOREIGN / "tb" / "tb-weight-limit", task)
    script = task / "run-tests.sh"
    script.write_text(
        script.read_text().replace("apt-get install -y curl", "apt-get install -y jq=1.6-2.1 curl")
    )
    (done,) = import_tasks([task], tmp_path / "out", "terminal-bench").converted
    dockerfile = (done.folder / "environment" / "Dockerfile").read_text()
    assert "install -y jq curl &&" in dockerfile and "jq=1.6-2.1" not in dockerfile
    assert any("apt pins (jq=1.6-2.1) are dropped" in why for why in done.approximate)


AGENTEXEC_PROBE = r"""
import os, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[1])
import agentexec
agentexec.install()
with tempfile.NamedTemporaryFile("w", delete=False) as handle:  # 0600, root's
    handle.write("terminal-bench-2025-secret-seed")
nested = tempfile.mkdtemp()
os.chmod(nested, 0o700)
with open(os.path.join(nested, "deeper"), "w") as other:
    other.write("not named directly in the temp folder")
named = subprocess.run(["cat", handle.name], capture_output=True, text=True)
print(named.stderr, file=sys.stderr)
print(named.stdout)
deeper = subprocess.run(["cat", os.path.join(nested, "deeper")], capture_output=True, text=True)
print("deeper:", deeper.returncode != 0)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to the agent's user needs root")
def test_a_temp_file_a_test_names_on_the_command_line_is_readable_by_the_program() -> None:
    import subprocess
    import sys

    from termgym.verifier import AGENTEXEC

    folder = AGENTEXEC.parent
    result = subprocess.run(
        [sys.executable, "-c", AGENTEXEC_PROBE, str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "terminal-bench-2025-secret-seed", result.stderr  # as the agent's user
    assert lines[1] == "deeper: True"  # a file in a folder of root's stays out of reach
