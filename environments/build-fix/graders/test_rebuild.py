"""Hidden tests: a plain `make` in a clean copy of /app builds the release configuration.

The files given to the built tool are the same whatever the release settings (sized for
every block size the release may use); what it must print stays in this process.
"""

import hashlib
import os
import random
import shutil
import subprocess
import zlib

import pytest

BLOCK_SIZES = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]  # buffer_size's choices
CHECKSUMS = {
    "crc32": lambda b: f"{zlib.crc32(b):08x}",
    "adler32": lambda b: f"{zlib.adler32(b):08x}",
    "sha256": lambda b: hashlib.sha256(b).hexdigest()[:16],
}


def expected(data, rules):
    size, checksum = int(rules["buffer_size"]), CHECKSUMS[rules["checksum"]]
    lines = []
    for index, offset in enumerate(range(0, len(data), size)):
        block = data[offset:offset + size]
        lines.append(f"{index} {offset} {len(block)} {checksum(block)}")
    count = (len(data) + size - 1) // size
    return lines + [f"total {len(data)} bytes in {count} blocks"]


def make(tree, *targets):
    env = {k: v for k, v in os.environ.items() if k not in ("BUFFER_SIZE", "CHECKSUM", "MAKEFLAGS")}
    return subprocess.run(
        ["make", "-C", str(tree), *targets], env=env, capture_output=True, text=True, timeout=30
    )


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory):
    tree = tmp_path_factory.mktemp("checkout") / "app"
    shutil.copytree("/app", tree, ignore=shutil.ignore_patterns("build", ".git", "__pycache__"))
    proc = make(tree)
    assert proc.returncode == 0, f"make failed in a clean copy:\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
    return tree


def run_tool(tool, path):
    proc = subprocess.run([str(tool), str(path)], capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, f"tool exited {proc.returncode}: {proc.stderr[-800:]}"
    return proc.stdout.splitlines()


def test_clean_make_builds_an_executable_tool(clean_build):
    tool = clean_build / "build" / "tool"
    assert tool.is_file() and os.access(tool, os.X_OK)


def test_clean_build_uses_the_release_settings(clean_build, rules, tmp_path):
    # Three of the largest blocks and 5 bytes: whole blocks and a short last one at every size.
    data = random.Random(21).randbytes(3 * max(BLOCK_SIZES) + 5)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert run_tool(clean_build / "build" / "tool", path) == expected(data, rules)


def test_clean_build_on_a_large_file(clean_build, rules, tmp_path):
    data = random.Random(22).randbytes(140_000)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert run_tool(clean_build / "build" / "tool", path) == expected(data, rules)


def test_make_clean_then_make_rebuilds(clean_build, rules):
    assert make(clean_build, "clean").returncode == 0
    assert not (clean_build / "build" / "tool").exists(), "make clean left build/tool behind"
    proc = make(clean_build)
    assert proc.returncode == 0, proc.stderr[-1500:]
    got = subprocess.run(
        [str(clean_build / "build" / "tool"), "--config"], capture_output=True, text=True, timeout=20
    ).stdout.split()
    assert got == [f"BUFFER_SIZE={rules['buffer_size']}", f"CHECKSUM={rules['checksum']}"]
