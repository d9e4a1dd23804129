"""A consistent hash ring with weighted nodes and a small lookup cache."""

import bisect
import hashlib
from functools import lru_cache


def _hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


class HashRing:
    """Maps keys to nodes so that adding or removing a node moves few keys."""

    def __init__(self, replicas: int = 64):
        self.replicas = replicas
        self._points: list[int] = []
        self._owners: dict[int, str] = {}
        self._weights: dict[str, int] = {}

    def add(self, node: str, weight: int = 1) -> None:
        if weight < 1:
            raise ValueError(f"weight must be at least 1, got {weight}")
        self._weights[node] = weight
        for i in range(self.replicas * weight):
            point = _hash(f"{node}#{i}")
            self._owners[point] = node
            bisect.insort(self._points, point)
        self.lookup.cache_clear()

    def remove(self, node: str) -> None:
        weight = self._weights.pop(node)
        for i in range(self.replicas * weight):
            point = _hash(f"{node}#{i}")
            del self._owners[point]
            self._points.remove(point)
        self.lookup.cache_clear()

    @lru_cache(maxsize=4096)
    def lookup(self, key: str) -> str:
        if not self._points:
            raise LookupError("the ring has no nodes")
        index = bisect.bisect(self._points, _hash(key)) % len(self._points)
        return self._owners[self._points[index]]

    def nodes(self) -> list[str]:
        return sorted(self._weights)
