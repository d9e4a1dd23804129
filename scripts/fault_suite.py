"""The fault suite's long part: at least `--faults` injected faults per backend, and the table of
docs/reliability.md (between its `<!-- faults:table -->` markers, with `--update-docs`).

    .venv/bin/python scripts/fault_suite.py [--backends docker,bwrap] [--faults 50]
        [--seed N] [--update-docs] [--no-engine] [--out DIR]

Per backend: runs of cargo-limit's oracle (4 episodes of each of two variants, 2 at a time)
stopped by SIGTERM, SIGKILL, SIGHUP and Ctrl-C at random points (one to three signals to a
run folder, each to the process then resuming it) and resumed to their end; runs whose
folder sits on a disk too small for them; two runs and a test session started at the same
moment on an empty cache; and, on docker, runs under which the Docker engine restarts or
crashes and restarts. The engine is one of the suite's own (its own data, exec root, socket
and pid file, no bridge, no iptables rules): the host's engine, which other work uses, is
never restarted. What each fault counts: tests/faults/harness.py. Needs root (the small
disk, the engine). Takes about half an hour on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from termgym.isolation import unmount_below  # noqa: E402
from tests.faults.harness import (  # noqa: E402
    OwnEngine,
    RunSpec,
    Tally,
    disk_full_fault,
    engine_restart_fault,
    full_run_seconds,
    signal_faults,
    small_disk,
    together_fault,
)

DOCS = ROOT / "docs" / "reliability.md"
SIGNALS = [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGINT]
WEIGHTS = [0.35, 0.35, 0.15, 0.15]
TOGETHER_TESTS = ["tests/sandbox/test_cache_concurrency.py", "tests/env/test_vector_infos.py"]


def backend_faults(
    backend: str, target: int, rng: random.Random, work: Path, engine: bool
) -> tuple[Tally, float]:
    """Every kind of fault on `backend`, signals until `target` faults are injected in all."""
    tally = Tally(backend)
    log = work / f"{backend}.log"
    began = time.monotonic()
    span = full_run_seconds(RunSpec(work / f"{backend}-timing", backend, episodes=4), log)
    print(f"{backend}: an undisturbed run takes {span:.1f} s", flush=True)
    for number in range(2):
        with small_disk(work / f"{backend}-disk{number}", "24k") as disk:
            spec = RunSpec(disk / f"{backend}-full{number}", backend, episodes=4)
            tally.add(disk_full_fault(spec, disk, log))
    cache = Path(tempfile.mkdtemp(prefix=f"termgym-fresh-{backend}-", dir=work))
    cache.chmod(0o755)
    env = (("TERMGYM_CACHE", str(cache)),)
    specs = [RunSpec(work / f"{backend}-together{i}", backend, episodes=4, env=env) for i in (1, 2)]
    try:
        tally.add(together_fault(specs, cache, TOGETHER_TESTS, log))
    finally:
        unmount_below(str(cache))  # the episodes' tmpfs bwrap mounts in a cache
        shutil.rmtree(cache, ignore_errors=True)
    if backend == "docker" and engine:
        tally.add(_engine_faults(rng, work, span, log))
    sequence = 0
    while tally.injected < target:
        sequence += 1
        signals = rng.choices(SIGNALS, WEIGHTS, k=rng.randint(1, 3))
        spec = RunSpec(work / f"{backend}-signals{sequence}", backend, episodes=4)
        tally.add(signal_faults(spec, signals, rng, span, log))
        print(f"{backend}: {tally.injected} faults so far", flush=True)
    return tally, time.monotonic() - began


def _engine_faults(rng: random.Random, work: Path, span: float, log: Path) -> Tally:
    engine = OwnEngine(work / "engine")
    tally = Tally("docker")
    try:
        engine.start()
        engine.load_image("termgym/base:bookworm")
        cache = work / "engine-cache"
        cache.mkdir()
        env = (("DOCKER_HOST", engine.address), ("TERMGYM_CACHE", str(cache)))
        engine_span = full_run_seconds(
            RunSpec(work / "engine-timing", "docker", episodes=4, env=env), log
        )
        for number in range(8):
            spec = RunSpec(work / f"docker-engine{number}", "docker", episodes=4, env=env)
            tally.add(engine_restart_fault(spec, engine, rng, engine_span, log))
    finally:
        engine.remove()
    return tally


def table(tallies: list[tuple[Tally, float]]) -> str:
    lines = [
        "| backend | faults injected | of which | episodes lost | counted twice | "
        "sandboxes leaked | hangs | wall time |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for tally, seconds in tallies:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(tally.by_kind.items()))
        lines.append(
            f"| {tally.backend} | {tally.injected} | {kinds} | {tally.lost} | {tally.twice} | "
            f"{tally.leaked} | {tally.hangs} | {seconds / 60:.0f} min |"
        )
    return "\n".join(lines)


def update_docs(markdown: str, path: Path = DOCS) -> None:
    begin, end = "<!-- faults:table -->", "<!-- /faults:table -->"
    text = path.read_text()
    block = f"{begin}\n{markdown}\n{end}"
    if begin not in text or end not in text:
        raise SystemExit(f"expected the markers {begin} and {end} in {path}")
    path.write_text(re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text,
                           flags=re.S))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/fault_suite.py", description=__doc__)
    parser.add_argument("--backends", default="docker,bwrap")
    parser.add_argument("--faults", type=int, default=50, help="at least this many per backend")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--update-docs", action="store_true")
    parser.add_argument("--no-engine", action="store_true", help="no engine restarts")
    parser.add_argument("--out", type=Path, default=None, help="work folder (default: a temp)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % 1_000_000
    rng = random.Random(seed)
    work = args.out or Path(tempfile.mkdtemp(prefix="termgym-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # a bwrap sandbox's unprivileged root walks to the caches made in it
    print(f"seed {seed}; runs and logs in {work}", flush=True)
    results = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        results.append(backend_faults(backend, args.faults, rng, work, not args.no_engine))
    markdown = table(results)
    notes = [note for tally, _ in results for note in tally.notes]
    print("\n" + markdown + "\n")
    for note in notes:
        print(f"- {note}")
    if args.update_docs:
        update_docs(markdown)
    return 0 if all(tally.clean for tally, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
