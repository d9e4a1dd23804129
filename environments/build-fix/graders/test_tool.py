"""Hidden tests: the built tool splits unseen files into release-sized blocks and checksums."""

import hashlib
import random
import subprocess
import zlib

TOOL = "/app/build/tool"
CHECKSUMS = {
    "crc32": lambda b: f"{zlib.crc32(b):08x}",
    "adler32": lambda b: f"{zlib.adler32(b):08x}",
    "sha256": lambda b: hashlib.sha256(b).hexdigest()[:16],
}


def expected(data, rules):
    size, checksum = rules["buffer_size"], CHECKSUMS[rules["checksum"]]
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


def check_file(tmp_path, data, rules):
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    got = run_tool([str(path)])
    want = expected(data, rules)
    assert got[-1] == want[-1]
    assert got == want


def test_large_file_is_cut_into_release_sized_blocks(rules, tmp_path):
    check_file(tmp_path, random.Random(11).randbytes(150_001), rules)


def test_file_of_exactly_three_blocks(rules, tmp_path):
    check_file(tmp_path, random.Random(12).randbytes(3 * rules["buffer_size"]), rules)


def test_file_one_byte_longer_than_a_block(rules, tmp_path):
    check_file(tmp_path, random.Random(13).randbytes(rules["buffer_size"] + 1), rules)


def test_file_smaller_than_one_block(rules, tmp_path):
    check_file(tmp_path, b"just a short note\n", rules)


def test_empty_file(rules, tmp_path):
    check_file(tmp_path, b"", rules)


def test_reads_standard_input(rules):
    data = random.Random(14).randbytes(2 * rules["buffer_size"] + 7)
    assert run_tool(["-"], stdin=data) == expected(data, rules)
