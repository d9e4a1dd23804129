"""Hidden tests: replaying the documented answers through the wizard reproduces config.json.

The replay runs the graders' own copy of the wizard (reference_wizard.py, a copy of the
shipped setup_wizard.py), as the graders' helper: the answers, which hold the enforced
values, are never given to a program in the agent's workspace (which the agent may have
replaced), and the replay cannot be steered by one.
"""

import json
import subprocess
import sys
from pathlib import Path

WIZARD = Path(__file__).with_name("reference_wizard.py")
SEEDS = "ingest-01.internal:7400, ingest-02.internal:7400"


def replay(answers, output):
    proc = subprocess.run(
        [sys.executable, str(WIZARD), "--output", str(output)],
        input="".join(a + "\n" for a in answers), capture_output=True, text=True, timeout=20,
    )
    assert proc.returncode == 0, f"wizard exited {proc.returncode}: {proc.stderr[-800:]}"
    with open(output) as f:
        return json.load(f)


def documented_answers(rules):
    answers = [rules["install_mode"]]
    if rules["install_mode"] == "cluster":
        answers.append(SEEDS)
    return answers + [str(rules["workers"]), str(rules["port"]), "/srv/ingestd/data", "", "n", "y"]


def test_config_matches_a_replay_of_the_documented_answers(rules, tmp_path):
    with open("/app/config.json") as f:
        actual = json.load(f)
    assert actual == replay(documented_answers(rules), tmp_path / "config.json")


def test_config_matches_a_replay_with_retyped_answers(rules, tmp_path):
    """Same answers typed clumsily first (the wizard asks again), same config."""
    answers = [rules["install_mode"].upper()]
    if rules["install_mode"] == "cluster":
        answers += ["", SEEDS]
    answers += ["0", "65", str(rules["workers"]), "80", str(rules["port"])]
    answers += ["srv/ingestd", "/srv/ingestd/data/", "", "maybe", "no", "y"]
    with open("/app/config.json") as f:
        actual = json.load(f)
    assert actual == replay(answers, tmp_path / "config.json")
