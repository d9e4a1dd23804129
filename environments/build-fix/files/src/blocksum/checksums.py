"""The checksum algorithms blocksum can be built with."""

import hashlib
import zlib


def crc32(block: bytes) -> str:
    return f"{zlib.crc32(block):08x}"


def adler32(block: bytes) -> str:
    return f"{zlib.adler32(block):08x}"


def sha256(block: bytes) -> str:
    return hashlib.sha256(block).hexdigest()[:16]


def none(block: bytes) -> str:
    return "-"


ALGORITHMS = {"crc32": crc32, "adler32": adler32, "sha256": sha256, "none": none}
