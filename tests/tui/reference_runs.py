"""The reference runs the TUI snapshots replay: the oracle and the memorizer on fuel-planner's
contradicted variant, the oracle and the cheater on text-report's impossible one, recorded
by the real agents in a real sandbox.

They are committed (tests/tui/fixtures/reference/), so the snapshots hold still from one test
run to the next. `test_the_recorded_reference_runs_are_what_the_agents_do_now` fails once the
agents or the task's solution scripts change; re-record them then, look at the result, and
regenerate the snapshots:

    .venv/bin/python tests/tui/reference_runs.py
    TERMGYM_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tui/test_snapshots.py
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "reference"
RUNS = {
    "oracle": ("oracle", "fuel-planner", "contradicted", 0),
    "memorizer": ("memorizer", "fuel-planner", "contradicted", 0),
    "impossible-oracle": ("oracle", "text-report", "impossible", 0),
    "impossible-cheater": ("cheater", "text-report", "impossible", 0),
}
"""Run name -> (agent, task, variant, seed)."""
AGENTS = tuple(RUNS)


_SIGNED = Path(tempfile.mkdtemp(prefix="termgym-reference-runs-"))
atexit.register(shutil.rmtree, _SIGNED, True)


def run_folder(name: str) -> Path:
    """The run folder of run `name` as this machine's: a copy whose recordings are signed
    with its recording key (the committed ones, recorded elsewhere, prove nothing here: a
    report would list them as unverified and count them in no figure)."""
    from termgym.recording import signed_here

    copy = _SIGNED / "runs" / name
    if not copy.exists():
        shutil.copytree(FIXTURES / name, copy)
        for path in (copy / "episodes").glob("*.jsonl"):
            path.write_bytes(signed_here(path.read_bytes()))
    return copy


def committed_file(name: str) -> Path:
    """The committed recording of run `name`."""
    [path] = (FIXTURES / name / "episodes").glob("*.jsonl")
    return path


def episode_file(name: str) -> Path:
    """The recorded episode of run `name` (a key of RUNS), as this machine's: a copy signed
    with its recording key (the committed file, recorded elsewhere, proves nothing here and
    would show as unverified), its cast beside it."""
    path = committed_file(name)
    from termgym.recording import signed_here

    copy = _SIGNED / name / "episodes" / path.name
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(signed_here(path.read_bytes()))
        shutil.copy(path.with_suffix(".cast"), copy.with_suffix(".cast"))
    return copy


def record(backend: str = "docker") -> None:
    """Run both agents for real and replace the committed runs with what they recorded."""
    from termgym.run import RunConfig, Runner

    with tempfile.TemporaryDirectory() as tmp:
        for name, (agent, task, variant, seed) in RUNS.items():
            out = Path(tmp) / name
            config = RunConfig(
                agent=agent, tasks=(task,), variants=(variant,), out=out, backend=backend,
                seed=seed, concurrency=1, pool_size=0, run_id=name,
            )  # fmt: skip
            summary = Runner(config).run()
            if [r.status for r in summary.results] != ["ok"]:
                raise SystemExit(f"{name}: expected one graded episode, got {summary.results}")
            shutil.rmtree(FIXTURES / name, ignore_errors=True)
            shutil.copytree(out, FIXTURES / name)
            print(f"recorded {name}: {committed_file(name).relative_to(Path.cwd())}")


if __name__ == "__main__":
    record(*sys.argv[1:])
