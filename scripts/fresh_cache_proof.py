"""From an empty cache, `make test` and two `termgym run --import` of Terminal-Bench-format
fixtures, started at the same moment, all succeed: `--rounds` times in a row.

    .venv/bin/python scripts/fresh_cache_proof.py [--rounds 3] [--pytest-args "..."]
        [--work DIR]

Empty means empty: each round has a TERMGYM_CACHE of its own and a Docker engine of its own
(its own data root, exec root, socket and pid file: no image, no network, no layer), so the
base image, the stand-in bases (debootstrap, CPython compiled), the imported tasks' images
and bwrap's root filesystems are all made during the round, by the three commands at once.
The engine's default bridge is one this script makes (`tgproof0`, 10.213.77.0/24) with a
masquerade rule and two forward rules of its own, so that the builds' steps reach Debian's
mirror; the engine itself sets no iptables rule and its containers no bridge of the host's
engine. Everything is removed at the end: the engines, their data, the caches, the bridge
and the rules. Needs root, debootstrap, and Debian's mirror.

`--pytest-args` narrows the test session (`make test PYTEST_ARGS=...`): the whole suite
takes half an hour alone on a 2-core machine; its cache-building part is the Makefile's
`image` and `build-stand-in` steps, which run whatever the arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.faults.harness import OwnEngine  # noqa: E402

BRIDGE, ADDRESS, SUBNET = "tgproof0", "10.213.77.1/24", "10.213.77.0/24"
RULES = [
    ["-t", "nat", "POSTROUTING", "-s", SUBNET, "!", "-o", BRIDGE, "-j", "MASQUERADE"],
    ["FORWARD", "-i", BRIDGE, "-j", "ACCEPT"],
    ["FORWARD", "-o", BRIDGE, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED",
     "-j", "ACCEPT"],
]  # fmt: skip
FIXTURES = ROOT / "tests" / "fixtures" / "foreign" / "tb"
TERMGYM = str(Path(sys.executable).parent / "termgym")


def _iptables(action: str, rule: list[str]) -> None:
    table = rule[:2] if rule[0] == "-t" else []
    chain, *rest = rule[len(table) :]
    subprocess.run(["iptables", "-w", *table, action, chain, *rest], check=True,
                   capture_output=True)  # fmt: skip


@contextlib.contextmanager
def network():  # type: ignore[no-untyped-def]
    """The proof engines' bridge and its rules, removed after."""
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        raise SystemExit(f"{BRIDGE} exists already: another proof runs, or one left it")
    subprocess.run(["ip", "link", "add", BRIDGE, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", ADDRESS, "dev", BRIDGE], check=True)
        subprocess.run(["ip", "link", "set", BRIDGE, "up"], check=True)
        added = []
        try:
            for rule in RULES:
                _iptables("-I", rule)
                added.append(rule)
            yield
        finally:
            for rule in added:
                _iptables("-D", rule)
    finally:
        subprocess.run(["ip", "link", "del", BRIDGE], check=False)


def one_round(number: int, work: Path, pytest_args: str) -> dict[str, tuple[int | None, float]]:
    """The three commands at once on an empty cache and engine; name -> (exit, seconds)."""
    home = work / f"round{number}"
    cache = home / "cache"
    cache.mkdir(parents=True)
    for folder in (work, home, cache):
        folder.chmod(0o755)  # a bwrap sandbox's unprivileged root walks to its root fs
    engine = OwnEngine(home / "engine", cgroup="termgym-proof", bridge=BRIDGE)
    engine.start()
    env = {**os.environ, "DOCKER_HOST": engine.address, "TERMGYM_CACHE": str(cache)}
    commands = {
        "make test": ["make", "test", f"PYTEST_ARGS={pytest_args}"],
        "run --import A": [TERMGYM, "run", "--agent", "oracle", "--import", str(FIXTURES),
                           "--out", str(home / "run-a"), "--no-report"],
        "run --import B": [TERMGYM, "run", "--agent", "oracle", "--import", str(FIXTURES),
                           "--out", str(home / "run-b"), "--no-report"],
    }  # fmt: skip
    began = time.monotonic()
    procs = {}
    for name, argv in commands.items():
        log = (home / (name.replace(" ", "-").replace("--", "") + ".log")).open("wb")
        procs[name] = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log,
                                       stderr=subprocess.STDOUT)  # fmt: skip
    done: dict[str, tuple[int | None, float]] = {}
    try:
        for name, proc in procs.items():
            try:
                proc.wait(timeout=6 * 3600)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            done[name] = (proc.returncode, time.monotonic() - began)
    finally:
        engine.remove()
        from termgym.isolation import unmount_below

        unmount_below(str(cache))
        shutil.rmtree(cache, ignore_errors=True)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/fresh_cache_proof.py", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pytest-args", default="", help="narrow make test's session")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="termgym-proof-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"logs in {work}", flush=True)
    ok = True
    with network():
        for number in range(1, args.rounds + 1):
            done = one_round(number, work, args.pytest_args)
            for name, (code, seconds) in done.items():
                print(f"round {number}: {name}: exit {code} after {seconds / 60:.1f} min",
                      flush=True)  # fmt: skip
                ok = ok and code == 0
            if not ok:
                break
    print("all succeeded" if ok else "a command failed: see the logs", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
