"""Command line: `tool [FILE]` prints one line per block, then a total line."""

import sys

from blocksum import _config
from blocksum.checksums import ALGORITHMS


def blocks(stream, size):
    while True:
        block = stream.read(size)
        if not block:
            return
        yield block


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--config":
        print(f"BUFFER_SIZE={_config.BUFFER_SIZE} CHECKSUM={_config.CHECKSUM}")
        return 0
    checksum = ALGORITHMS[_config.CHECKSUM]
    stream = open(args[0], "rb") if args and args[0] != "-" else sys.stdin.buffer
    offset = count = 0
    with stream:
        for index, block in enumerate(blocks(stream, _config.BUFFER_SIZE)):
            print(f"{index} {offset} {len(block)} {checksum(block)}")
            offset += len(block)
            count += 1
    print(f"total {offset} bytes in {count} blocks")
    return 0
