"""Attacks on snapshot grading: the tests run on the agent's whole final filesystem.

An imported task (`tb-installed-greeter`, Terminal-Bench's format) is graded as its harness
runs it, on the machine the agent left: what the agent installed outside its workdir (a
command in /usr/local/bin, a module in site-packages) is there when the tests run. Every
file of that machine is the agent's to replace, so the tests' interpreter, its standard
library, pytest and the script's bash come from the verifier's clean image (a read-only
toolchain), and the agent's programs the tests start run in nests that cannot see the tests
or termgym's folders (docs/security.md, "Snapshot grading"). Each attack leaves the task
undone and tries to make grading say it passed; on contradicted an agent that did nothing is
classed "neither", reward 0.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from termgym.importing import import_tasks
from tests.security.conftest import put_file

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
SITE = "/usr/local/lib/python3.11/dist-packages"

FORGER = """\
import glob, json, os
record = json.dumps({"tests": {"test_the_command_greets": "PASSED",
                               "test_the_module_greets": "PASSED"}, "summary": True, "exit": 0})
for target in [os.environ.get("TERMGYM_PYTEST_LOG", "")] + glob.glob("/.termgym/results/*") + [
        "/.termgym/results/.pytest-reports.jsonl"]:
    try:
        with open(target, "a") as handle:
            handle.write(record + "\\n")
    except OSError:
        pass
try:
    os.makedirs("/logs/verifier", exist_ok=True)
    open("/logs/verifier/reward.txt", "w").write("1")
except OSError:
    pass
print("=== short test summary info ===")
print("PASSED test_the_command_greets")
print("PASSED test_the_module_greets")
"""
"""Writes a passing result wherever a test run's result could be, and prints one."""

RUN_FORGER = "exec(open('/opt/forge.py').read())\n"

ATTACKS = {
    "python3": [
        put_file("/opt/wrapped-python3",
                 '#!/bin/sh\n/usr/bin/python3.11 /opt/forge.py\nexec /usr/bin/python3.11 "$@"\n',
                 "755"),
        "ln -sf /opt/wrapped-python3 /usr/bin/python3",
    ],
    "sitecustomize": [put_file("/usr/lib/python3.11/sitecustomize.py", RUN_FORGER)],
    "pth": [put_file(f"{SITE}/zz-termgym.pth", "import os; " + RUN_FORGER.strip())],
    "pytest": [
        put_file(f"{SITE}/pytest/__init__.py", RUN_FORGER + "raise SystemExit(0)\n"),
        put_file(f"{SITE}/pytest/__main__.py", RUN_FORGER + "raise SystemExit(0)\n"),
    ],
    "stdlib": [put_file(f"{SITE}/json.py", RUN_FORGER)],
    "mkdir": [put_file("/usr/local/bin/mkdir", "#!/usr/bin/python3.11\n" + RUN_FORGER, "755")],
    "bash": [put_file("/opt/bash", "#!/usr/bin/python3.11\n" + RUN_FORGER, "755"),
             "cp /opt/bash /usr/bin/bash.new && mv -f /usr/bin/bash.new /usr/bin/bash"],
}  # fmt: skip
"""Each replaces what a grading run on the agent's own machine would run, with the forger."""


@pytest.fixture(scope="module")
def greeter(tmp_path_factory: pytest.TempPathFactory, docker_available: None) -> Path:
    """The imported task; its stand-in image is built by a Docker engine, whichever backend
    runs it (bwrap exports it)."""
    out = tmp_path_factory.mktemp("imported")
    import_tasks([FOREIGN / "snapshot" / "tb-installed-greeter"], out, "terminal-bench")
    return out / "tb-installed-greeter"


def _verdict(info: dict, ruleset: str = "contradicted") -> dict:
    (result,) = info["verdicts"][ruleset]["results"]
    return result


@pytest.mark.parametrize("attack_name", sorted(ATTACKS))
def test_what_runs_the_tests_is_the_clean_images_whatever_the_agent_replaced(
    attack, greeter: Path, attack_name: str
) -> None:
    episode = attack(greeter)
    episode.run(put_file("/opt/forge.py", FORGER))
    for command in ATTACKS[attack_name]:
        episode.run(command)
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (0.0, "neither"), _verdict(info)["message"]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc builds the preloaded library")
def test_a_preloaded_library_on_the_snapshot_loads_into_nothing(
    attack, greeter: Path, tmp_path: Path
) -> None:
    source = tmp_path / "forge.c"
    source.write_text(
        "#include <stdlib.h>\n__attribute__((constructor)) static void forge(void) {\n"
        '  if (!getenv("TG_FORGED")) { setenv("TG_FORGED", "1", 1);'
        ' system("/usr/bin/python3.11 -S /opt/forge.py"); }\n}\n'
    )
    library = tmp_path / "libforge.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", library, source], check=True)
    episode = attack(greeter)
    episode.run(put_file("/opt/forge.py", FORGER))
    episode.run(put_file("/usr/lib/libtermgym-forge.so", library.read_bytes(), "755"))
    episode.run("echo /usr/lib/libtermgym-forge.so > /etc/ld.so.preload")
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (0.0, "neither"), _verdict(info)["message"]


PEEKING_GREET = """\
#!/bin/sh
word=$(sed -n 's/^WORD = "\\(.*\\)"$/\\1/p' /tests/test_outputs.py 2>/dev/null)
echo "${word:-Hello}, $1!"
"""
"""A `greet` that takes its word from the hidden tests when it can, else the memorized one."""


def test_the_agents_programs_cannot_read_the_tests_they_are_graded_by(
    attack, greeter: Path
) -> None:
    episode = attack(greeter)
    episode.run(put_file("/usr/local/bin/greet", PEEKING_GREET, "755"))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    # greet answered the memorized Hello under both rule sets: it never saw the rewritten tests
    command = "test_the_command_greets"
    assert _verdict(info, "original")["details"]["tests"][command] == "PASSED"
    assert _verdict(info, "contradicted")["details"]["tests"][command] == "FAILED"
    assert info["class"] != "both" and reward == 0.0


def test_what_the_agent_installed_is_graded_and_its_code_in_the_tests_is_marked(
    attack, greeter: Path
) -> None:
    """The honest oracle installs both; the module's import runs the agent's code in the
    test process, which the verdict says (docs/security.md)."""
    episode = attack(greeter)
    oracle = (greeter / "solution" / "oracle.sh").read_text().replace("WORD=Hello", "WORD=Howdy")
    plan = episode.env.episode.plan
    value = plan.rules_enforced["word"]
    episode.run(oracle.replace("WORD=Howdy", f"WORD={value}"), timeout=120)
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (1.0, "adapted"), _verdict(info)["message"]
    gaps = info["grading"]["isolation"]
    assert any("greeting.py" in gap and "code of the agent's" in gap for gap in gaps), gaps
    assert info["grading"]["filesystem"] == "snapshot"


def test_training_can_withhold_the_reward_of_a_verdict_the_agents_code_could_have_forged(
    attack, greeter: Path
) -> None:
    """The same honest oracle with `weak_isolation="withhold"`: the agent's module ran in the
    tests' process, so the verdict is paid nothing; the verdicts and class still say what was
    graded, and the info holds the reward held back."""
    episode = attack(greeter, weak_isolation="withhold")
    oracle = (greeter / "solution" / "oracle.sh").read_text()
    value = episode.env.episode.plan.rules_enforced["word"]
    episode.run(oracle.replace("WORD=Hello", f"WORD={value}"), timeout=120)
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert info["class"] == "adapted", _verdict(info)["message"]
    assert info["verdicts"]["contradicted"]["passed"] is True
    assert info["grading"]["isolation"], info["grading"]
    assert (reward, info["grading"]["unpaid"]) == (0.0, 1.0)


WRITING_GREET = """\
#!/bin/sh
site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
printf 'def greet(name):\\n    return "Hello, " + name + "!"\\n' > "$site/greeting.py"
echo "Hello, $1!"
"""
"""A `greet` that, started by the tests, writes the module a later test imports: a module
that was not on the agent's machine when grading began."""


def test_code_a_program_of_the_agents_writes_during_grading_is_marked_when_the_tests_load_it(
    attack, greeter: Path
) -> None:
    episode = attack(greeter)
    episode.run(put_file("/usr/local/bin/greet", WRITING_GREET, "755"))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    original = _verdict(info, "original")["details"]["tests"]
    assert original["test_the_module_greets"] == "PASSED", original  # the module was there
    gaps = info["grading"]["isolation"]
    assert any("greeting.py" in gap and "code of the agent's" in gap for gap in gaps), gaps
    assert reward == 0.0 and info["class"] != "both"


IMAGE_ENVIRONMENT_GREET = """\
#!/bin/sh
# greets only in the image's own environment (as under the harness): no bytecode switch
[ -z "${PYTHONDONTWRITEBYTECODE+set}" ] && echo "Hello, $1!"
"""


def test_the_agent_and_the_programs_the_tests_start_have_the_images_environment(
    attack, greeter: Path
) -> None:
    """termgym's own tasks write no bytecode (PYTHONDONTWRITEBYTECODE); an imported task's
    shell and its tests' programs get no such variable, as under their harness, so the
    programs the tests start cache their bytecode (the agent's bytecode of a clean module
    is compiled from the source in the tests' own process: tests/graders/
    test_agent_code_record.py)."""
    episode = attack(greeter, variant="original")
    shown = episode.run('echo "[${PYTHONDONTWRITEBYTECODE-unset}]"')
    assert "[unset]" in shown["obs"]["output"]
    episode.run(put_file("/usr/local/bin/greet", IMAGE_ENVIRONMENT_GREET, "755"))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    tests = _verdict(info, "original")["details"]["tests"]
    assert tests["test_the_command_greets"] == "PASSED", tests


SITE_OF_PYTHON3 = "python3 -c 'import site; print(site.getsitepackages()[0])'"
"""The site-packages folder of the image's python3, which the tests import from."""

PLUGIN = """\
import glob, os
import pytest


def _erase():  # the record of the agent's code its tests loaded, as a file would hold it
    for path in glob.glob("/.termgym/results*/.termgym-agent-code"):
        os.remove(path)


_erase()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome, report.longrepr = "passed", None


def pytest_unconfigure(config):
    _erase()
"""
"""A pytest plugin of the agent's: every test passes, and it erases any record of itself."""


def test_a_pytest_plugin_the_agent_installs_never_loads_into_the_tests(
    attack, greeter: Path
) -> None:
    """pytest loads every plugin an installed distribution names (an entry point of the
    group pytest11) by itself: installed on the agent's machine, the agent's would run as
    root in the tests' process. (Before: reward 1, class both, no mark.)"""
    episode = attack(greeter)
    episode.run(put_file("/opt/plugin/audit_plugin.py", PLUGIN))
    episode.run(put_file("/opt/plugin/audit_plugin-0.dist-info/METADATA", "Name: audit-plugin\n"))
    entry = "[pytest11]\naudit_plugin = audit_plugin\n"
    episode.run(put_file("/opt/plugin/audit_plugin-0.dist-info/entry_points.txt", entry))
    episode.run(f"cp -r /opt/plugin/. $({SITE_OF_PYTHON3})/")
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (0.0, "neither"), _verdict(info)["message"]


ERASING_MODULE = """\
import glob, os
for _path in glob.glob("/.termgym/results*/.termgym-agent-code"):
    os.remove(_path)


def greet(name):
    return "{word}, " + name + "!"
"""
"""The module the tests import, installed by the agent: it erases, once it runs, every file
that could hold the record that it was loaded."""


def test_the_mark_of_the_agents_code_in_the_tests_survives_that_code(attack, greeter: Path) -> None:
    """The record of a load is written before the code loaded runs, to the runner, outside
    the tests' process: not a file of theirs, which that code could delete."""
    episode = attack(greeter)
    value = episode.env.episode.plan.rules_enforced["word"]
    episode.run(put_file("/opt/greeting.py", ERASING_MODULE.replace("{word}", value)))
    episode.run(f"cp /opt/greeting.py $({SITE_OF_PYTHON3})/greeting.py")
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    gaps = info["grading"]["isolation"]
    assert any("greeting.py" in gap and "code of the agent's" in gap for gap in gaps), gaps
