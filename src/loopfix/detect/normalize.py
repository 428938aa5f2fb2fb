"""Near-loop normalisation: mask the volatile tokens that change while the rest repeats."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Normalized:
    """A token sequence with each run of same-class volatile tokens collapsed to one class token.

    `ids[j]` is the normalised token j (class c becomes the id -1 - c, below every real id), and
    `origin[j]` the index of the original token it starts at (with `origin[-1] == len(original)`
    appended, so the tokens of normalised position j are `origin[j]:origin[j + 1]`).
    """

    ids: np.ndarray
    origin: np.ndarray
    volatile: np.ndarray


def classes_from_mapping(ids: np.ndarray, token_classes: Mapping[int, int]) -> np.ndarray:
    """Class of each token (-1 for tokens that are not volatile) from a token-id -> class map."""
    return np.array([token_classes.get(int(token), -1) for token in ids], dtype=np.int64)


def normalize(ids: np.ndarray, classes: np.ndarray) -> Normalized:
    """Replace volatile tokens (class >= 0) by their class and collapse runs of one class, so a
    counter written with one digit token or three normalises the same way."""
    volatile = classes >= 0
    replaced = np.where(volatile, -1 - classes, ids)
    continues = np.zeros(len(ids), dtype=bool)
    continues[1:] = volatile[1:] & (replaced[1:] == replaced[:-1])
    keep = np.flatnonzero(~continues)
    origin = np.append(keep, len(ids))
    return Normalized(ids=replaced[keep], origin=origin, volatile=volatile[keep])
