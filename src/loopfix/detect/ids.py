"""Token sequences as integer arrays: the one representation every tier works on."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def as_ids(tokens: Sequence[Hashable] | np.ndarray) -> np.ndarray:
    """Return `tokens` as a 1-D int64 array.

    Integer tokens (model token ids) are kept as they are; any other hashable tokens (words from
    a text segmentation) are interned in order of first appearance, so equal tokens get equal ids.
    """
    array = np.asarray(tokens) if not isinstance(tokens, np.ndarray) else tokens
    if array.ndim != 1 and len(tokens) > 0:
        raise ValueError(f"expected a 1-D token sequence, got shape {array.shape}")
    if array.dtype.kind in "iub":
        return array.astype(np.int64, copy=False)
    if len(array) == 0:
        return np.zeros(0, dtype=np.int64)
    vocabulary: dict[Hashable, int] = {}
    return np.fromiter(
        (vocabulary.setdefault(token, len(vocabulary)) for token in tokens),
        dtype=np.int64,
        count=len(tokens),
    )
