"""The reference runs the TUI snapshots replay: the oracle and the memorizer on fuel-planner's
contradicted variant, recorded by the real agents in a real sandbox.

They are committed (tests/tui/fixtures/reference/), so the snapshots hold still from one test
run to the next. `test_the_recorded_reference_runs_are_what_the_agents_do_now` fails once the
agents or the task's solution scripts change; re-record them then, look at the result, and
regenerate the snapshots:

    .venv/bin/python tests/tui/reference_runs.py
    TERMGYM_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tui/test_snapshots.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "reference"
AGENTS = ("oracle", "memorizer")
TASK, VARIANT, SEED = "fuel-planner", "contradicted", 0


def episode_file(agent: str) -> Path:
    """The recorded episode of `agent` (oracle or memorizer)."""
    [path] = (FIXTURES / agent / "episodes").glob("*.jsonl")
    return path


def record(backend: str = "docker") -> None:
    """Run both agents for real and replace the committed runs with what they recorded."""
    from termgym.run import RunConfig, Runner

    with tempfile.TemporaryDirectory() as tmp:
        for agent in AGENTS:
            out = Path(tmp) / agent
            config = RunConfig(
                agent=agent, tasks=(TASK,), variants=(VARIANT,), out=out, backend=backend,
                seed=SEED, concurrency=1, pool_size=0,
            )  # fmt: skip
            summary = Runner(config).run()
            if [r.status for r in summary.results] != ["ok"]:
                raise SystemExit(f"{agent}: expected one graded episode, got {summary.results}")
            shutil.rmtree(FIXTURES / agent, ignore_errors=True)
            shutil.copytree(out, FIXTURES / agent)
            print(f"recorded {agent}: {episode_file(agent).relative_to(Path.cwd())}")


if __name__ == "__main__":
    record(*sys.argv[1:])
