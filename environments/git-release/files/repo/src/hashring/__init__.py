"""hashring: consistent hashing for spreading keys over a changing set of nodes."""

from hashring.ring import HashRing

__version__ = "1.4.2"
__all__ = ["HashRing", "__version__"]
