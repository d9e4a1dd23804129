"""Attacks on the grading machinery from inside the agent's sandbox: none may raise the reward.

Each attack leaves the task undone (no plan.py) and tries to make grading say it passed:
by replacing what grading would run (the interpreter, its site hooks, its standard library,
pytest, the dynamic loader, programs on PATH), by having its own graded program attack the
runner, by reading the rules grading enforces, or by leaving processes and files behind.
On fuel-planner / contradicted an agent that did nothing is classed "neither", reward 0.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.security.conftest import HERE, PAYLOADS, install_forger, put_file

HOOK = """
import os
with open("/proc/self/cmdline", "rb") as _tg:
    if b"termgym_run.py" in _tg.read():
        os.system("/usr/bin/python3.11 -S /opt/forge.py")
"""
"""Python code that, run inside the grading runner's interpreter, prints a forged report."""


def _assert_not_fooled(episode, *, fooled_in_place: bool = True) -> None:
    if fooled_in_place:
        assert _fools_in_place(episode), "the attack no longer fools in-place grading"
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (0.0, "neither")


def _fools_in_place(episode, patience: float = 120.0) -> bool:
    """Whether grading in the agent's own sandbox believes the attack, tried again until it
    does: an attacker racing the runner (a daemon catching it alive) may lose a round to a
    busy machine, as a real one would try again."""
    deadline = time.monotonic() + patience
    while not episode.in_place():
        if time.monotonic() > deadline:
            return False
    return True


def test_a_replaced_interpreter_does_not_grade(attack) -> None:
    episode = attack()
    episode.run(install_forger())
    fake = (
        "#!/bin/bash\n"
        'case "$*" in *termgym_run.py*) exec /usr/bin/python3.11 -S /opt/forge.py;; esac\n'
        'exec /usr/bin/python3.11 "$@"\n'
    )
    episode.run(put_file("/usr/local/bin/python3", fake, "755"))
    episode.run("ln -sf /usr/local/bin/python3 /usr/bin/python3")
    _assert_not_fooled(episode)


@pytest.mark.parametrize("hook", ["sitecustomize", "pth", "stdlib"])
def test_site_hooks_and_a_patched_standard_library_do_not_grade(attack, hook: str) -> None:
    episode = attack()
    episode.run(install_forger())
    if hook == "sitecustomize":
        episode.run(put_file("/usr/lib/python3.11/sitecustomize.py", HOOK))
    elif hook == "pth":
        episode.run(put_file("/opt/hook.py", HOOK))
        line = "import os; exec(open('/opt/hook.py').read())\n"
        episode.run(put_file("/usr/lib/python3/dist-packages/zz-termgym.pth", line))
    else:
        episode.run(f"cat >> /usr/lib/python3.11/json/__init__.py <<'EOF'\n{HOOK}\nEOF")
    _assert_not_fooled(episode)


FAKE_PYTEST = """
import json, os, sys
args = sys.argv[1:]
report = args[args.index("--junitxml") + 1]
names = list(json.load(open(os.environ["TERMGYM_RULESETS_FILE"])))
cases = "".join(
    '<testcase name="t"><properties><property name="termgym_ruleset" value="%s"/>'
    '</properties></testcase>' % n for n in names
)
open(report, "w").write('<testsuite tests="%d">%s</testsuite>' % (len(names), cases))
"""


def test_a_fake_pytest_does_not_grade(attack) -> None:
    episode = attack()
    episode.run(put_file("/usr/lib/python3.11/pytest.py", FAKE_PYTEST))
    _assert_not_fooled(episode)


PRELOAD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void forge(void) {
    char line[4096] = {0};
    int fd = open("/proc/self/cmdline", O_RDONLY);
    if (fd < 0) return;
    ssize_t n = read(fd, line, sizeof line - 1);
    close(fd);
    for (ssize_t i = 0; i < n; i++) if (!line[i]) line[i] = ' ';
    if (strstr(line, "termgym_run.py") && !getenv("TG_FORGED")) {
        setenv("TG_FORGED", "1", 1);
        system("/usr/bin/python3.11 -S /opt/forge.py");
    }
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc builds the preloaded library")
def test_a_preloaded_library_does_not_grade(attack, tmp_path: Path) -> None:
    source = tmp_path / "forge.c"
    source.write_text(PRELOAD)
    library = tmp_path / "libforge.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", library, source], check=True)
    episode = attack()
    episode.run(install_forger())
    episode.run(put_file("/usr/lib/libtermgym-forge.so", library.read_bytes(), "755"))
    episode.run("echo /usr/lib/libtermgym-forge.so > /etc/ld.so.preload")
    _assert_not_fooled(episode)


def test_programs_on_path_the_old_freeze_and_timeouts_used_change_nothing(attack) -> None:
    """`sh` and `timeout` wrappers that answer at once and leave a forger running."""
    episode = attack()
    episode.run(install_forger())
    wrapper = (
        "#!/bin/bash\n"
        "(setsid /usr/bin/python3.11 -S -c 'import os,time\\n"
        'while True: os.system("python3.11 -S /opt/forge.py plan contradicted,original");'
        " time.sleep(0.05)' >/dev/null 2>&1 &)\n"
        "echo done\nexit 0\n"
    )
    for name in ("sh", "timeout", "kill", "ps"):
        episode.run(put_file(f"/usr/local/bin/{name}", wrapper, "755"))
    _assert_not_fooled(episode, fooled_in_place=False)


def test_the_graded_program_cannot_reach_the_runner(attack, backend: str) -> None:
    """plan.py, run by the graders, forges a report into the runner's own output.

    (In a bwrap sandbox even in-place grading resists this one: the runner's output is a
    pipe of host root's, which a sandbox's root cannot open.)"""
    episode = attack()
    episode.run(install_forger())
    plan = (
        "import os, subprocess, sys\n"
        "subprocess.run([sys.executable, '/opt/forge.py', 'plan', 'contradicted,original'])\n"
        "for root in ('/var/lib/termgym-verifier', '/tmp'):\n"
        "    for base, dirs, files in os.walk(root):\n"
        "        for name in files:\n"
        "            try: print(open(os.path.join(base, name)).read()[:200])\n"
        "            except OSError: pass\n"
    )
    episode.run(put_file("/app/plan.py", plan))
    _assert_not_fooled(episode, fooled_in_place=backend == "docker")


def test_the_graded_program_gets_no_rule_values_in_its_environment(attack) -> None:
    """A planner that applies TERMGYM_RULES would pass every variant without reading."""
    episode = attack()
    plan = (
        "import json, os, sys\n"
        "rules = json.loads(os.environ['TERMGYM_RULES'])\n"
        "m = json.load(open(sys.argv[1]))\n"
        "ok = [c for c in m['cargo'] if c['weight'] <= rules['max_weight']]\n"
        "print(json.dumps({'flight': m['flight'], 'accepted': [c['id'] for c in ok],\n"
        "  'rejected': [c['id'] for c in m['cargo'] if c['weight'] > rules['max_weight']],\n"
        "  'cargo_weight': sum(c['weight'] for c in ok),\n"
        "  'fuel': -(-m['trip_fuel'] * (100 + rules['reserve_pct']) // 100)}))\n"
    )
    episode.run(put_file("/app/plan.py", plan))
    _assert_not_fooled(episode)


def test_a_grader_file_among_the_arguments_does_not_run_the_program_as_root(attack) -> None:
    """The test names a file of the grader folder as the argument of the agent's program.
    When such a command line counted as the grader's own helper, the program ran as root
    with TERMGYM_RULES in its environment, and this one passed every rule set without
    reading the task (log-triage's shipped-logs test was such a test). It runs as the
    agent's user: no rules in its environment, and the grader's file is out of its reach."""
    episode = attack(task=HERE / "tasks" / "grader-data-arg")
    count = (
        "import json, os, sys\n"
        "rules = json.loads(os.environ.get('TERMGYM_RULES', '{}'))\n"
        "try:\n"
        "    ids = open(sys.argv[1]).read().split()\n"
        "except OSError:\n"
        "    ids = []\n"
        "print(-(-len(ids) // rules.get('limit', 1)))\n"
    )
    episode.run(put_file("/app/count.py", count))
    reward, info = episode.submit()
    assert info["error"] is None, info["error"]
    assert (reward, info["class"]) == (0.0, "neither")
    [result] = info["verdicts"]["contradicted"]["results"]
    # It read nothing and knew nothing: 0 batches where 2 were expected.
    assert "assert '0' == '2'" in result["message"], result["message"]


def test_processes_the_agent_leaves_running_do_not_survive_into_grading(
    attack, backend: str
) -> None:
    """(In bwrap each exec has a pid namespace of its own: the daemon could not see even an
    in-place runner.)"""
    episode = attack()
    episode.run(install_forger())
    daemon = (
        "import os, time\n"
        "while True:\n"
        "    os.system('python3 /opt/forge.py plan contradicted,original >/dev/null 2>&1')\n"
        "    time.sleep(0.02)\n"
    )
    episode.run(put_file("/opt/daemon.py", daemon))
    episode.run("setsid nohup python3 /opt/daemon.py >/dev/null 2>&1 &")
    _assert_not_fooled(episode, fooled_in_place=backend == "docker")


def test_planted_reports_and_result_files_are_ignored(attack) -> None:
    episode = attack()
    junit = (
        '<testsuite tests="2"><testcase name="t"><properties><property '
        'name="termgym_ruleset" value="contradicted"/></properties></testcase><testcase '
        'name="t"><properties><property name="termgym_ruleset" value="original"/>'
        "</properties></testcase></testsuite>"
    )
    for folder in ("/app", "/tmp/results", "/var/lib/termgym-verifier/planted/results-x"):
        episode.run(put_file(f"{folder}/junit.xml", junit))
        episode.run(f"echo 1 > {folder}/score")
    episode.run("printf '\\nTERMGYM-REPORT forged 00\\n' > /app/plan.py.out")
    _assert_not_fooled(episode, fooled_in_place=False)


def test_breaking_the_tools_before_submitting_is_a_counted_failure(attack) -> None:
    """Breaking python3 used to turn a counted failure into an uncounted infrastructure error."""
    episode = attack()
    episode.run("rm -f /usr/bin/python3* /usr/local/bin/python3*; echo > /usr/lib/python3.11/os.py")
    _assert_not_fooled(episode, fooled_in_place=False)


def test_a_forger_payload_is_what_the_tests_say_it_is() -> None:
    """The shared payload forges a report the host would believe when given the key."""
    from termgym.grading._report import parse

    text = (PAYLOADS / "forge.py").read_text()
    namespace: dict[str, object] = {"__name__": "forge"}
    exec(compile(text, "forge.py", "exec"), namespace)  # noqa: S102 - our own test payload
    import os

    os.environ["TERMGYM_REPORT_KEY"] = "k" * 64
    try:
        line = namespace["report"](["plan", "contradicted,original"])  # type: ignore[operator]
    finally:
        del os.environ["TERMGYM_REPORT_KEY"]
    runs = parse(line, "k" * 64)
    assert runs is not None and runs["plan"][0]["rulesets"] == ["contradicted", "original"]
    assert parse(line, "another key") is None


def test_a_planner_cannot_read_the_enforced_rule_off_the_hidden_tests_inputs(attack) -> None:
    """The hidden tests give every planner the same manifests whatever the rule, so a planner
    that takes the fuel reserve from the policy but guesses the weight limit from the
    manifests (the middle of the run of consecutive weights the tests probe around it) fails
    the weight tests of a sampled episode. Against manifests built around the limit, as the
    tests once were, this guess is exact and the episode is classed "both"."""
    episode = attack(variant="sampled")
    plan = (
        "import json, sys\n"
        "pct = json.load(open('/app/policy/fuel_policy.json'))['reserve_fuel_pct']\n"
        "m = json.load(open(sys.argv[1]))\n"
        "w = sorted({c['weight'] for c in m['cargo']})\n"
        "runs = [x for x in w if x - 1 in w and x + 1 in w]\n"
        "limit = runs[len(runs) // 2] if runs else (max(w) // 2 if w else 0)\n"
        "ok = [c for c in m['cargo'] if c['weight'] <= limit]\n"
        "print(json.dumps({'flight': m['flight'], 'accepted': [c['id'] for c in ok],\n"
        "  'rejected': [c['id'] for c in m['cargo'] if c['weight'] > limit],\n"
        "  'cargo_weight': sum(c['weight'] for c in ok),\n"
        "  'fuel': -(-m['trip_fuel'] * (100 + pct) // 100)}))\n"
    )
    episode.run(put_file("/app/plan.py", plan))
    reward, info = episode.submit()
    [result] = info["verdicts"]["sampled"]["results"]
    assert "test_a_sweep_of_weights_splits_exactly_at_the_limit" in result["details"]["failed"]
    assert "test_fuel_is_trip_fuel_plus_reserve_rounded_up" not in result["details"]["failed"]
    assert reward < 1.0 and info["class"] != "both"
