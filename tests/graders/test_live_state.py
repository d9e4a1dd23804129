"""Live-state grading: the graders run in a clean verifier that shares the agent's network."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import termgym
from termgym.tasks import load_task

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "live-service"


def _episode(backend: str, script: str) -> tuple[float, dict]:
    task = load_task(TASK)
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        body = task.path(script).read_text()
        env.step(f"bash <<'TERMGYM_SOLUTION'\n{body}\nTERMGYM_SOLUTION")
        _, reward, _, _, info = env.step(termgym.SUBMIT)
        return reward, info
    finally:
        env.close()


def test_a_service_the_agent_left_running_is_graded_where_it_runs(backend) -> None:
    reward, info = _episode(backend, "solution/oracle.sh")
    assert info["error"] is None and (reward, info["class"]) == (1.0, "adapted")
    reward, info = _episode(backend, "solution/memorized.sh")
    assert (reward, info["class"]) == (0.0, "stale")


def test_without_a_running_service_live_grading_fails_the_task(backend) -> None:
    task = load_task(TASK)
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        env.step("echo 20 > /app/index.html")  # the right page, but nothing serves it
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert (reward, info["class"]) == (0.0, "neither")


ONE_SHOT = r"""
cat > /app/once.py <<'SERVER'
import http.server
import re

LIMIT = re.search(r"at most (\d+) items", open("/app/policy.txt").read()).group(1).encode()

class Once(http.server.BaseHTTPRequestHandler):
    served = 0

    def do_GET(self):
        body = LIMIT if Once.served == 0 else b"served already"
        Once.served += 1
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", 8080), Once).serve_forever()
SERVER
cd /app && setsid nohup python3 once.py >/dev/null 2>&1 &
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null && exit 0; sleep 0.1; done
exit 1
"""
"""A service whose first request decides every later answer: it gives the limit the policy
states once, then never again (the readiness probe connects and sends nothing)."""


def test_live_rule_sets_are_graded_one_after_another_the_enforced_first(backend) -> None:
    # Graded at once, the original shadow's request could come first and take the answer
    # the enforced rule set's test needs (a reward decided by a race); one after another,
    # the enforced rule set always asks first, and the shadow sees what it changed.
    task = load_task(TASK)
    for seed in range(3):
        env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
        try:
            env.reset(seed=seed)
            obs, *_ = env.step(f"bash <<'TERMGYM_SOLUTION'\n{ONE_SHOT}\nTERMGYM_SOLUTION")
            _, reward, _, _, info = env.step(termgym.SUBMIT)
        finally:
            env.close()
        assert info["error"] is None, info["error"]
        assert (reward, info["class"]) == (1.0, "adapted"), (seed, obs, info)


def test_an_agent_that_stops_its_own_sandbox_before_grading_fails_the_task(backend) -> None:
    """Its live state is gone with its shell: the agent's failure, counted, never an error
    of termgym's (which a run retries and leaves out of every rate)."""
    task = load_task(TASK)
    env = termgym.make(task, variant="contradicted", backend=backend, pool_size=0)
    try:
        env.reset(seed=0)
        env.step("(sleep 0.5; kill -9 $$) >/dev/null 2>&1 & disown; echo started")
        time.sleep(1.5)
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert reward == 0.0 and info["class"] in ("neither", "grader-error"), info


LEASE = r"""
cat > /app/lease.py <<'PY'
import fcntl, os, signal, time
signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease break asked: not given
fd = os.open("/app/held.txt", os.O_RDONLY)
fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)  # F_SETLEASE: any other open waits for the break
print("leased", flush=True)
time.sleep(600)
PY
echo held > /app/held.txt
nohup python3 /app/lease.py > /app/lease.log 2>&1 &
sleep 1; cat /app/lease.log
"""


@pytest.mark.docker
def test_a_copy_of_live_work_the_agents_process_holds_up_is_the_agents_failure(
    docker_engine: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file lease of the agent's (live state: its processes still run while its work is
    copied out) holds the engine's read of the file for 45 s: the copy passes its own time,
    which is the agent's failure, counted, not a stall of the engine's (an infrastructure
    error, retried and left out of every rate)."""
    import shutil

    import termgym.sandbox._docker as docker_backend

    root = tmp_path / "live-service"
    shutil.copytree(TASK, root)
    spec = (root / "task.yaml").read_text()
    limits = "{grading_timeout: 20, work_copy_timeout: 2}"
    (root / "task.yaml").write_text(spec.replace("{grading_timeout: 20}", limits))
    monkeypatch.setattr(docker_backend, "ENGINE_DEADLINE", 3.0)
    env = termgym.make(load_task(root), variant="contradicted", backend="docker", pool_size=0)
    try:
        env.reset(seed=0)
        out = env.step(LEASE)[0]["output"]
        assert "leased" in out, out
        _, reward, _, _, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert (reward, info["class"]) == (0.0, "grader-error"), info["error"]
    assert "took longer than 2 s" in info["error"], info["error"]
