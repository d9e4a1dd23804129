"""Attacks on time, output, disk and the host: grading ends, the run goes on, the host is untouched.

The target is a small fixture task (`tasks/adversary`: a grader that runs the agent's
program with no time limit of its own, a 5 s grading timeout, a 64 MiB disk limit), so that
a hang or a fill shows within seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from termgym.agents import SUBMIT, register_agent, unregister_agent
from termgym.run import RunConfig, Runner
from tests.security.conftest import ADVERSARY, put_file


def test_a_program_that_hangs_grading_is_a_counted_grader_error(attack) -> None:
    episode = attack(ADVERSARY)
    program = (
        "import os, time\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    time.sleep(1)\n"
    )
    episode.run(put_file("/app/answer.py", program))
    began = time.monotonic()
    reward, info = episode.submit()
    assert time.monotonic() - began < 200  # ended by the 5 s grading timeout; a hang never ends
    assert (reward, info["class"]) == (0.0, "grader-error")
    assert "timed out" in info["error"]


def test_a_program_that_trickles_output_forever_cannot_hold_the_step(attack) -> None:
    episode = attack(ADVERSARY)
    program = (
        "import sys, time\nwhile True:\n    sys.stdout.write('.')\n"
        "    sys.stdout.flush()\n    time.sleep(0.5)\n"
    )
    episode.run(put_file("/app/answer.py", program))
    began = time.monotonic()
    reward, info = episode.submit()
    assert time.monotonic() - began < 200  # ended by the grading timeout; a trickle never ends
    assert (reward, info["class"]) == (0.0, "grader-error")


@pytest.mark.parametrize("megabytes", [2, 400])
def test_a_program_that_floods_its_output_scores_nothing(attack, megabytes: int) -> None:
    """A flood fails the test; one the grader cannot hold in memory or in its time is a
    grader-error saying so. Either way the reward is 0 and grading ends."""
    episode = attack(ADVERSARY)
    program = f"import sys\nfor _ in range({megabytes}):\n    sys.stdout.write('x' * (1 << 20))\n"
    episode.run(put_file("/app/answer.py", program))
    reward, info = episode.submit()
    assert reward == 0.0 and info["class"] in ("neither", "grader-error")
    if info["class"] == "grader-error":
        assert "killed" in info["error"] or "timed out" in info["error"], info["error"]


def test_writing_past_the_disk_limit_stops_at_the_limit(attack, backend: str) -> None:
    episode = attack(ADVERSARY)
    bound = getattr(episode.env.episode.sandbox, "disk_limit", "filesystem")  # bwrap: tmpfs
    fill = "dd if=/dev/urandom of=/app/fill bs=1M count=512 2>&1"
    # a watchdog stops the container past the limit while the step still runs (the step
    # timeout is 60 s); a filesystem of the limit refuses the writes at once
    step = episode.run(fill + ("; sleep 120" if bound == "watchdog" else "; sleep 2"))
    if bound in ("filesystem", "engine"):  # the writable layer is a 64 MiB filesystem
        output = step["obs"]["output"]
        assert "No space left on device" in output or "Disk quota exceeded" in output, output
        assert not step["done"]
        reward, info = episode.submit()
        assert reward == 0.0 and info["class"] in ("neither", "grader-error")
    else:  # the watchdog stopped the container past 64 MiB, ending the episode
        assert step["done"], step["obs"]["output"]
        assert "disk limit" in step["info"]["sandbox_crashed"]
        assert (step["reward"], step["info"]["class"]) == (0.0, "grader-error")


def test_copies_never_follow_the_agents_symlinks_onto_the_host(attack, tmp_path: Path) -> None:
    host = tmp_path / "host-folder"
    host.mkdir()
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only\n")
    episode = attack()
    episode.run(
        f"rm -rf /tmp && ln -s {host} /tmp && ln -s {secret} /app/leak.txt && "
        f"mkdir -p /var/lib && ln -s {host} /var/lib/termgym-verifier && "
        f"ln -s {host} /app/policy/out"
    )
    reward, info = episode.submit()
    assert (reward, info["class"]) == (0.0, "neither")
    assert list(host.iterdir()) == []
    assert secret.read_text() == "host only\n"


PRIVILEGED = r"""
echo 1 > /proc/sys/kernel/core_pattern 2>/dev/null && echo core_pattern-written
echo 1 > /proc/sys/net/ipv4/ip_forward 2>/dev/null && echo ip_forward-written
unshare -U true 2>/dev/null && echo userns-made
unshare -m true 2>/dev/null && echo mountns-made
mount -t tmpfs none /mnt 2>/dev/null && echo mounted
python3 - <<'EOF'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 248, "aarch64": 217}[__import__("platform").machine()]
if libc.syscall(nr, b"user", b"termgym-test", b"secret", 6, -2) >= 0:  # add_key
    print("key-added")
EOF
grep -q TERMGYM_TEST_CANARY /proc/1/environ 2>/dev/null && echo host-environment-seen
cp /bin/sh /app/rootsh && chmod u+s /app/rootsh
echo checked
"""


def test_privileged_syscalls_are_refused_and_root_is_not_host_root(
    attack, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERMGYM_TEST_CANARY", "host-only-value")
    episode = attack()
    out = episode.run(PRIVILEGED)["obs"]["output"]
    assert out.strip().splitlines()[-1] == "checked", out
    for forbidden in ("written", "userns-made", "mountns-made", "mounted", "key-added", "seen"):
        assert forbidden not in out
    if backend == "bwrap":  # the setuid file on the host disk belongs to an unprivileged uid
        sandbox = episode.env.episode.sandbox
        upper = Path(sandbox.home) / "disk" / "upper" / "app" / "rootsh"
        assert upper.stat().st_uid != 0


class _Attacker:
    """An agent that breaks grading in a different way on every episode, then submits."""

    name = "attacker"
    privileged = False
    ATTACKS = [
        "rm -f /usr/bin/python3*",
        "echo 'import time\\nwhile True: time.sleep(1)' > /app/answer.py",
        "printf '\\nTERMGYM-REPORT forged 00\\n'",
    ]

    def __init__(self) -> None:
        self.steps = 0
        self.index = 0

    def reset(self, context) -> None:  # noqa: ANN001
        self.steps = 0
        self.index = int(context.episode_id.rsplit("-", 1)[-1], 16) % len(self.ATTACKS)

    def act(self, observation) -> str:  # noqa: ANN001
        self.steps += 1
        return self.ATTACKS[self.index] if self.steps == 1 else SUBMIT

    def transcript(self) -> list:
        return []


def test_a_run_of_attacking_episodes_goes_on_and_counts_every_one(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(ADVERSARY.parent))
    register_agent("attacker", _Attacker)
    try:
        config = RunConfig(
            agent="attacker", tasks=("adversary",), variants=("original", "contradicted"),
            episodes=3, concurrency=2, out=tmp_path / "run", backend=backend, retries=1,
        )  # fmt: skip
        summary = Runner(config).run()
    finally:
        unregister_agent("attacker")
    assert len(summary.results) == 6 and summary.infra_errors == 0
    assert {r.status for r in summary.results} == {"ok"}
    assert all(r.reward == 0.0 for r in summary.results)
    assert {r.episode_class for r in summary.results} <= {None, "neither", "grader-error"}
    assert os.path.getsize(tmp_path / "run" / "results.jsonl") > 0


def test_the_agents_own_symlinks_never_carry_its_files_elsewhere_in_the_verifier(
    attack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task declares /app/out/tool besides its workdir /app: the agent makes /app/out a
    symlink, so the copy of /app/out/tool is taken through it, and unpacked through the
    same symlink it would land in /usr/local/bin of the verifier (or below /lib, replacing
    the loader every program there starts with). Shown first with the guard lifted."""
    import termgym.grading._bundle as bundle

    task = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "overlapping-state"
    plant = (
        "mkdir -p /usr/local/bin/tool && echo x > /usr/local/bin/tool/planted && "
        "echo built > /usr/local/bin/tool/README && rm -rf /app/out && "
        "ln -s /usr/local/bin /app/out"
    )
    with monkeypatch.context() as lifted:
        lifted.setattr(bundle, "_under_a_link", lambda name, links: False)
        episode = attack(task, variant="original")
        episode.run(plant)
        _, info = episode.submit()
        assert "outside=True" in str(info["verdicts"]), info
    episode = attack(task, variant="original")
    episode.run(plant)
    reward, info = episode.submit()
    assert "outside=False" in str(info["verdicts"]), info
    assert reward == 0.0 and info["error"] is None
