"""The one way loopfix derives a seed from others: a hash, so it does not depend on order of use,
batch layout or process."""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(*parts: object, bits: int = 32) -> int:
    """A `bits`-bit seed from `parts` (the run's seed, a prompt id or position, a sample index),
    equal wherever the same parts are given."""
    digest = hashlib.sha256(":".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:4], "little") & ((1 << bits) - 1)
