"""What the Harbor bridge adds per command (`python -m termgym.bench agents`).

Terminus-2's own commands (tmux's has-session, capture-pane, send-keys), run over and over,
side by side in one run:
- as a step of termgym's own agents: `env.step(command)`, on docker and on bwrap;
- as a Harbor agent's `environment.exec(command)` through the bridge: timed in Harbor's
  process, from the call to its result (the request over the pipe, the step, the reply);
- the same calls answered at once, with no step: the pipe's own round trip (both processes
  woken once each way);
- as Harbor's Docker environment runs it: a `docker exec ... bash -c` subprocess, read as
  Harbor reads it, timed in Harbor's process against a container of the same image. (Harbor
  runs `docker compose exec`, which also parses the compose files each call; this machine
  has no compose v2, so the plain exec stands in: a lower bound of Harbor's cost, which makes
  the ratio below an upper bound of ours.)
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from termgym.bench import Row, Section, timings_row

COMMANDS = (
    "tmux has-session -t bench",
    "tmux capture-pane -p -t bench",
    "tmux send-keys -t bench -- 'echo hi' Enter",
    "tmux capture-pane -p -S - -t bench",
)
SETUP = "tmux new-session -x 160 -y 40 -d -s bench 'bash --login'"
TARGET_RATIO = 1.2
TARGET_STEP_MS = 1.0


def bench_agents(*, quick: bool = False) -> Section:
    """Run the section (docker for the comparison with Harbor's Docker environment, bwrap
    beside it for termgym's own step)."""
    from termgym.agents.harbor import installed_python
    from termgym.images import docker_answers

    rounds = 10 if quick else 50
    python = installed_python()
    if python is None or not docker_answers():
        return Section("agents", "Harbor's agents: the bridge per command", (), (
            "skipped: needs Harbor's virtualenv (`make harbor`) and a Docker engine",
        ))  # fmt: skip
    notes: list[str] = []
    by: dict[str, tuple[Row, Row, Row]] = {}
    docker: list[float] = []
    pipe: list[float] = []
    for backend in ("docker", "bwrap"):
        own, wrapped, bridged, harbor, alone = _measure(python, backend, rounds)
        docker = harbor or docker
        pipe += alone
        by[backend] = (
            timings_row(f"termgym step, {backend} (env.step, no bridge)", own),
            timings_row(f"termgym step in the bridge's form (bash -c), {backend}", wrapped),
            timings_row(f"Harbor exec through the bridge, {backend}", bridged),
        )
    rows = [by["docker"][0], by["docker"][2], by["bwrap"][0], by["bwrap"][2]]
    rows += [by["docker"][1], by["bwrap"][1]]
    rows.append(timings_row("Harbor's Docker environment: docker exec bash -c", docker))
    rows.append(timings_row("Harbor exec through the bridge, answered at once (the pipe)", pipe))
    median = {r.label: r.p50_ms for r in rows}
    ratio = median[rows[1].label] / median[rows[-2].label]
    for backend, (a, form, b) in by.items():
        notes.append(
            f"the bridge adds {b.p50_ms - a.p50_ms:.3f} ms per command on {backend} (p50): "
            f"{form.p50_ms - a.p50_ms:.3f} ms the fresh bash each exec runs in (as Harbor's "
            f"docker exec runs one), {b.p50_ms - form.p50_ms:.3f} ms the pipe and Harbor's side"
        )
    notes.append(
        f"Harbor exec through the bridge on docker / Harbor's Docker exec: {ratio:.2f}x "
        f"(target <= {TARGET_RATIO}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'})"
    )
    step, through = median[rows[2].label], median[rows[3].label]
    met = "met" if through < TARGET_STEP_MS else "not met"
    notes.append(
        f"termgym's own step on bwrap: {step:.3f} ms; through the bridge: {through:.3f} ms "
        f"(target: under {TARGET_STEP_MS:g} ms where termgym's own step is: {met}"
        f"{'' if step < TARGET_STEP_MS else '; termgym own step is not under it here either'})"
    )
    notes.append(
        f"the pipe alone (the calls answered at once, no step): {median[rows[-1].label]:.3f} ms "
        "per call (p50); the rest of what the bridge adds is waiting for the two processes to "
        "be scheduled around the step, which grows with the machine's load"
    )
    notes.append(f"{len(COMMANDS)} of Terminus-2's tmux commands x {rounds} rounds each")
    return Section("agents", "Harbor's agents: the bridge per command", tuple(rows), tuple(notes))


def _measure(
    python: Path, backend: str, rounds: int
) -> tuple[list[float], list[float], list[float], list[float], list[float]]:
    """termgym's own steps, the same steps in the bridge's command form (a fresh bash), the
    bridged execs, (docker) Harbor's docker execs, and the execs answered with no step."""
    import termgym
    from termgym.agents.harbor import HarborProcess, exec_command, operation

    own: list[float] = []
    wrapped: list[float] = []
    container = _container() if backend == "docker" else ""
    try:
        with tempfile.TemporaryDirectory(prefix="termgym-bench-") as tmp:
            env = termgym.make(
                "fuel-planner", backend=backend, shadow=False, pool_size=0, max_steps=10**6
            )
            try:
                env.reset(seed=0)
                env.step(SETUP)
                for _ in range(rounds):
                    for command in COMMANDS:
                        began = time.perf_counter()
                        env.step(command)
                        own.append(time.perf_counter() - began)
                        began = time.perf_counter()
                        env.step(exec_command(command))
                        wrapped.append(time.perf_counter() - began)
                process = HarborProcess(python)
                try:
                    process.send({"op": "bench", "commands": list(COMMANDS), "rounds": rounds,
                                  "docker": container, "logs_dir": tmp})  # fmt: skip
                    result = _serve(process, env, operation)
                    process.send({"op": "bench", "commands": list(COMMANDS), "rounds": rounds,
                                  "docker": "", "logs_dir": tmp})  # fmt: skip
                    alone = _serve(process, None, operation)
                finally:
                    process.close()
            finally:
                env.close()
    finally:
        if container:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, timeout=60)
    return own, wrapped, list(result["bridge"]), list(result["docker"]), list(alone["bridge"])


def _serve(process: Any, env: Any, operation: Any) -> dict[str, Any]:
    """Answer the bench's exec requests with steps, as HarborAgent.act does (env None: at
    once, with an empty output and no step)."""
    while True:
        message = process.receive(timeout=300)
        if message.get("op") == "benched":
            return message
        pending = operation(message)
        command = pending.next_command()
        while command is not None:
            obs = env.step(command)[0] if env is not None else {"output": "", "exit_code": 0}
            pending.feed(obs["output"], obs["exit_code"])
            command = pending.next_command()
        process.send(pending.reply())


def _container() -> str:
    """A container of the base image for Harbor's docker execs, with tmux's session."""
    from termgym.images import BASE_IMAGE, SANDBOX_LABEL

    started = subprocess.run(
        ["docker", "run", "-d", "--rm", "--network", "none", "--label", f"{SANDBOX_LABEL}=bench",
         BASE_IMAGE, "sleep", "3600"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    container = started.stdout.strip()
    subprocess.run(["docker", "exec", "-w", "/app", container, "bash", "-c", SETUP],
                   capture_output=True, timeout=60, check=True)  # fmt: skip
    return container
