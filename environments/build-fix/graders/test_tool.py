"""Hidden tests: the built tool splits unseen files into release-sized blocks and checksums.

The files given to the tool are the same whatever the release settings: the boundary
cases are given for every block size the release may use (`buffer_size`'s choices in
task.yaml), so the size can be learnt from BUILD.md only, never from the files. What the
tool must print for them under the enforced settings stays in this process.
"""

import hashlib
import random
import subprocess
import zlib

TOOL = "/app/build/tool"
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


def run_tool(args, stdin=None):
    proc = subprocess.run([TOOL, *args], input=stdin, capture_output=True, timeout=20)
    assert proc.returncode == 0, f"tool exited {proc.returncode}: {proc.stderr.decode()[-800:]}"
    return proc.stdout.decode().splitlines()


def check_file(tmp_path, data, rules, name="input.bin"):
    path = tmp_path / name
    path.write_bytes(data)
    got = run_tool([str(path)])
    want = expected(data, rules)
    assert got[-1] == want[-1], f"{len(data)} bytes: {got[-1]!r}, expected {want[-1]!r}"
    assert got == want, f"{len(data)} bytes"


def test_large_file_is_cut_into_release_sized_blocks(rules, tmp_path):
    check_file(tmp_path, random.Random(11).randbytes(150_001), rules)


def test_file_of_exactly_three_blocks(rules, tmp_path):
    assert int(rules["buffer_size"]) in BLOCK_SIZES  # a choice: its value is a string
    for size in BLOCK_SIZES:
        check_file(tmp_path, random.Random(12).randbytes(3 * size), rules, f"three-{size}.bin")


def test_file_one_byte_longer_than_a_block(rules, tmp_path):
    for size in BLOCK_SIZES:
        check_file(tmp_path, random.Random(13).randbytes(size + 1), rules, f"one-more-{size}.bin")


def test_file_smaller_than_one_block(rules, tmp_path):
    check_file(tmp_path, b"just a short note\n", rules)


def test_empty_file(rules, tmp_path):
    check_file(tmp_path, b"", rules)


def test_reads_standard_input(rules):
    # Two of the largest blocks and 7 bytes: whole blocks and a short last one at every size.
    data = random.Random(14).randbytes(2 * max(BLOCK_SIZES) + 7)
    assert run_tool(["-"], stdin=data) == expected(data, rules)
