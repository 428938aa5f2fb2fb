"""Teacher-forced batches: right-padded ids plus the (row, position) states that are read out.

A state at position p predicts token p + 1, so each batch also carries those target tokens.
Right padding is safe for a causal model: padding after a sequence never reaches its states.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from loopfix.repair.sources.base import BranchPair

__all__ = ["ProbeBatch", "branch_batches", "make_batches", "walk_batches"]


@dataclass(frozen=True)
class ProbeBatch:
    ids: torch.Tensor  # [batch, length]
    rows: torch.Tensor  # [n] row of each read-out state
    positions: torch.Tensor  # [n] position of each read-out state
    targets: torch.Tensor  # [n] the token each state predicts

    def chunks(self, max_tokens: int) -> list[ProbeBatch]:
        """The batch as consecutive row groups of at most `max_tokens` ids each (at least one
        row), each cut after its last read-out position: a causal model's states there do not
        see the ids after them, so every state and target is the same as in the whole batch."""
        width = int(self.positions.max()) + 1 if len(self.positions) else 1
        step = max(1, max_tokens // width)
        parts = []
        for start in range(0, len(self.ids), step):
            keep = (self.rows >= start) & (self.rows < start + step)
            if not keep.any():
                continue
            positions = self.positions[keep]
            parts.append(
                ProbeBatch(
                    self.ids[start : start + step, : int(positions.max()) + 1],
                    self.rows[keep] - start,
                    positions,
                    self.targets[keep],
                )
            )
        return parts


def make_batches(
    items: Sequence[tuple[list[int], list[int]]], batch_size: int, pad_id: int
) -> list[ProbeBatch]:
    """items: (token ids, positions to read). Positions must leave a next token to predict."""
    batches = []
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        rows, positions, targets = [], [], []
        for row, (sequence, read) in enumerate(chunk):
            ids[row, : len(sequence)] = torch.tensor(sequence)
            rows += [row] * len(read)
            positions += read
            targets += [sequence[p + 1] for p in read]
        batches.append(
            ProbeBatch(ids, torch.tensor(rows), torch.tensor(positions), torch.tensor(targets))
        )
    return batches


def branch_batches(
    pairs: Sequence[BranchPair], which: str, positions: str, batch_size: int, pad_id: int
) -> list[ProbeBatch]:
    """The states that predict each pair's probed branch tokens."""
    items = []
    for pair in pairs:
        offset = len(pair.prefix) - 1
        read = [offset + j for j in pair.targets(which, positions)]
        if read:
            items.append((pair.prefix + pair.branch(which), read))
    return make_batches(items, batch_size, pad_id)


def walk_batches(
    walks: Sequence[tuple[list[int], int]], batch_size: int, pad_id: int, max_positions: int
) -> list[ProbeBatch]:
    """States that predict walk tokens (after the prompt), at most `max_positions` per walk,
    evenly spaced: the stored base distributions are states x vocabulary floats."""
    items = []
    for ids, prompt in walks:
        read = list(range(prompt - 1, len(ids) - 1))
        if len(read) > max_positions:
            step = len(read) / max_positions
            read = [read[int(i * step)] for i in range(max_positions)]
        items.append((ids, read))
    return make_batches(items, batch_size, pad_id)
