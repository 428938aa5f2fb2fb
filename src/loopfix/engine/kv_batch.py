"""`KVBatch`: the decode engine's running rows, with their KV cache, attention mask and next
positions kept in step.

Rows are left-padded. A batch can prefill new contexts, step every row by one token, drop rows
(and the leading columns no remaining row uses) and join another batch's rows (the shorter side
padded on the left and masked) - the moves continuous batching needs. Only caches made of plain
full-attention layers can be cut and joined row by row (`mergeable`).

The keys and values of such a cache live in buffers with room to grow (`SpareLayer`): a step
writes its token's keys and values in place, where transformers' `DynamicLayer` concatenates
the whole cache into a new tensor every step and layer (measured on SmolLM2: a ninth of the
engine's time, more when other jobs share the memory bus).

A Llama-architecture model prefills and steps through its fused forward (`llama_fused`) while
no hook asks for its modules; the prefill then runs the prompts packed, without the padding
tokens, and leaves the same left-padded cache, mask and positions as the model's forward.
Otherwise the model's own forward runs, its linear layers on packed oneDNN weights for the
duration of that call only (`onednn.accelerate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
from torch.profiler import record_function
from transformers import DynamicCache, DynamicLayer, PreTrainedModel

from loopfix.engine.fast.llama_fused import LlamaFused, fused_forward
from loopfix.engine.fast.onednn import accelerate

__all__ = ["SPARE_POSITIONS", "KVBatch", "SpareLayer", "mergeable"]

SPARE_POSITIONS = 128
"""Positions a `SpareLayer` buffer keeps free beyond what it holds when it (re)allocates: one
copy of the cache per this many steps instead of one per step."""


def mergeable(model: PreTrainedModel) -> bool:
    """Whether every cache layer is a plain full-attention one (rows can be cut and joined)."""
    cache = DynamicCache(config=model.config)
    return all(type(layer).__name__ == "DynamicLayer" for layer in cache.layers)


class KVBatch:
    """The running rows: their KV cache, attention mask and next positions, kept in step.

    state_layer: after each prefill and step, `states` holds every row's hidden state there at
    its last position (rows, width; numbered as `output_hidden_states` numbers them), for a
    warning that reads the model while it generates; None: not kept."""

    def __init__(self, model: PreTrainedModel, state_layer: int | None = None) -> None:
        self.model, self.state_layer = model, state_layer
        self.states: torch.Tensor | None = None
        self.cache = DynamicCache(config=model.config)
        # The fused forward writes into SpareLayers, so it serves mergeable caches only.
        self.fused: LlamaFused | None = None
        if mergeable(model):
            self.cache.layers = [SpareLayer() for _ in self.cache.layers]
            self.fused = fused_forward(model)
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=model.device)
        self.positions = torch.zeros(0, dtype=torch.long, device=model.device)

    def __len__(self) -> int:
        return int(self.mask.shape[0])

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> Any:
        # Cache positions given, not derived: transformers would otherwise ask the cache for its
        # length every step (a measurable share of a small model's step on CPU).
        width = mask.shape[1]
        cache_position = torch.arange(width - ids.shape[1], width, device=ids.device)
        # Its linear layers on packed oneDNN weights for this call only (`onednn.accelerate`):
        # outside the engine's own calls the model runs as it came.
        with accelerate(self.model):
            return self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                cache=self.cache,
                cache_position=cache_position,
                logits_to_keep=1,
                output_hidden_states=self.state_layer is not None,
            )

    def _model_logits(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> Any:
        """The model's own forward: the last position's logits, and its state if kept."""
        output = self._forward(ids, mask, positions)
        if self.state_layer is not None:
            self.states = output.hidden_states[self.state_layer][:, -1, :].float()
        return output.logits[:, -1, :]

    def prefill(self, contexts: Sequence[list[int]], pad_id: int) -> torch.Tensor:
        """Start a batch on these contexts (left-padded); the next-token logits per row."""
        width = max(len(c) for c in contexts)
        device = self.model.device
        ids = torch.full((len(contexts), width), pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, context in enumerate(contexts):
            ids[row, width - len(context) :] = torch.tensor(context, dtype=torch.long)
            mask[row, width - len(context) :] = 1
        ids, mask = ids.to(device), mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with record_function("engine prefill"):  # named in profiles (bench_real_model --profile)
            if self.fused is not None and self.fused.packs(mask):
                logits, states = self.fused.prefill(ids, mask, self.cache, self.state_layer)
                self.states = None if states is None else states.float()
            else:
                logits = self._model_logits(ids, mask, positions)
        self.mask, self.positions = mask, positions[:, -1] + 1
        return logits.float()

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        ones = torch.ones((len(self), 1), dtype=self.mask.dtype, device=self.mask.device)
        self.mask = torch.cat([self.mask, ones], dim=1)
        ids, positions = tokens[:, None], self.positions[:, None]
        with record_function("engine decode step"):
            if self.fused is not None and self.fused.supported():
                logits, states = self.fused.step(
                    ids, self.mask, positions, self.cache, self.state_layer
                )
                self.states = None if states is None else states.float()
            else:
                logits = self._model_logits(ids, self.mask, positions)
        self.positions = self.positions + 1
        return logits.float()

    def keep(self, rows: list[int]) -> None:
        """Drop every other row, and the columns no remaining row uses."""
        index = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.mask = self.mask.index_select(0, index)
        self.positions = self.positions.index_select(0, index)
        used = self.mask.any(dim=0).nonzero()
        start = int(used[0]) if len(used) else self.mask.shape[1]
        self.mask = self.mask[:, start:]
        for layer in _full_layers(self.cache):
            layer.hold(
                _keys(layer).index_select(0, index)[:, :, start:],
                _values(layer).index_select(0, index)[:, :, start:],
            )

    def join(self, other: KVBatch) -> None:
        """Append `other`'s rows; the shorter side is padded on the left."""
        if not len(self):
            self.cache, self.mask, self.positions = other.cache, other.mask, other.positions
            return
        width = max(self.mask.shape[1], other.mask.shape[1])
        masks = [_pad_left(b.mask, width, dim=1) for b in (self, other)]
        self.mask = torch.cat(masks, dim=0)
        self.positions = torch.cat([self.positions, other.positions])
        pairs = zip(_full_layers(self.cache), _full_layers(other.cache), strict=True)
        for mine, theirs in pairs:
            mine.hold(
                torch.cat([_pad_left(_keys(x), width, dim=2) for x in (mine, theirs)]),
                torch.cat([_pad_left(_values(x), width, dim=2) for x in (mine, theirs)]),
            )


class SpareLayer(DynamicLayer):
    """A full-attention cache layer whose keys and values are views of buffers with spare
    positions: `update` writes the new positions in place and reallocates (with
    `SPARE_POSITIONS` to spare) only when the buffer is full. Same values as `DynamicLayer`."""

    def __init__(self) -> None:
        super().__init__()
        self._key_buffer = self._value_buffer = torch.zeros(0)
        self._length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.hold(key_states[:, :, :0], value_states[:, :, :0])

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start = self._extend(key_states.shape[2])
        self._key_buffer[:, :, start : self._length] = key_states
        self._value_buffer[:, :, start : self._length] = value_states
        return _keys(self), _values(self)

    def append_slot(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One more position, for a caller that writes its keys and values into the buffers
        itself (the fused decode step's kernel): (key buffer, value buffer, that position)."""
        position = self._extend(1)  # may reallocate: the buffers after it
        return self._key_buffer, self._value_buffer, position

    def hold_zeros(
        self, rows: int, heads: int, positions: int, head_dim: int, like: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Hold `positions` zero positions (of `like`'s dtype and device), for a caller that
        writes the keys and values into the buffers itself (the fused prefill): the buffers."""
        zeros = like.new_zeros((rows, heads, positions, head_dim))
        self.lazy_initialization(zeros, zeros)
        self.hold(zeros, zeros)
        return self._key_buffer, self._value_buffer

    def _extend(self, positions: int) -> int:
        """Hold `positions` more (reallocating when the buffers are full); where they start."""
        start, end = self._length, self._length + positions
        if end > self._key_buffer.shape[2]:
            self.hold(_keys(self), _values(self), room=positions)
        self._length = end
        self.keys = self._key_buffer[:, :, :end]
        self.values = self._value_buffer[:, :, :end]
        return start

    def hold(self, keys: torch.Tensor, values: torch.Tensor, room: int = 0) -> None:
        """Hold these keys and values (batch, heads, positions, dim) in new buffers with room
        for `room` + `SPARE_POSITIONS` more positions."""
        self._length = keys.shape[2]
        self._key_buffer = _with_room(keys, room + SPARE_POSITIONS)
        self._value_buffer = _with_room(values, room + SPARE_POSITIONS)
        self.keys = self._key_buffer[:, :, : self._length]
        self.values = self._value_buffer[:, :, : self._length]


def _with_room(tensor: torch.Tensor, room: int) -> torch.Tensor:
    batch, heads, positions, dim = tensor.shape
    buffer = tensor.new_empty((batch, heads, positions + room, dim))
    buffer[:, :, :positions] = tensor
    return buffer


def _full_layers(cache: DynamicCache) -> list[SpareLayer]:
    """A mergeable batch's cache layers (all `SpareLayer`s: see `mergeable`)."""
    return cast(list[SpareLayer], cache.layers)


def _keys(layer: DynamicLayer) -> torch.Tensor:
    return cast(torch.Tensor, layer.keys)


def _values(layer: DynamicLayer) -> torch.Tensor:
    return cast(torch.Tensor, layer.values)


def _pad_left(tensor: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    missing = width - tensor.shape[dim]
    if not missing:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)
