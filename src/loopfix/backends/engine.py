"""Our transformers decode loop: continuous batching, a seed per request, guards, rollback.

`model.generate` runs a batch until its longest row ends and draws every row from one random
stream, so a sample depends on its batch mates and a looping row holds the whole batch to the
cap. This loop keeps up to `batch_size` sequences in flight instead:

1. Admit waiting requests into free rows: prefill them together (left-padded), then merge
   their KV cache into the running batch (the shorter side is padded on the left and masked).
   Admission waits until a quarter of the rows are free (or none run), so that each prefill
   pass and cache merge serves several newcomers.
2. Each step, per row: the sampler's penalties (HF repetition, OpenAI presence / frequency),
   the guard chain, optional capture of top-1 probability and entropy, then the warpers
   (temperature, top-k, top-p, min-p) - `model.generate`'s order - and argmax (greedy) or an
   inverse-CDF draw with a uniform number that depends only on the request's seed and the
   output position (a counter-based generator, drawn for all rows at once).
3. Feed the token to the sampler and the chain; a row ends at EOS, at the cap, or when `cut`
   stopped it ("repetition"). Ended rows leave the batch at once (their cache rows dropped).
4. When `rescue` asks for a rollback, the row leaves the batch with its kept tokens and is
   admitted again at the next refill (its prefix re-prefilled; the chain keeps its ledger).
5. Everyone else runs one forward step on the token just drawn.

A sample therefore depends only on its prompt, its seed and the settings, not on which requests
share its batch (up to float rounding of batched matmuls), and two guard chains that leave a
step's logits alone draw the same token there: comparisons are paired at every temperature.
Caches that cannot be merged or trimmed row by row (sliding-window or linear-attention layers)
run in fixed batches instead: ended rows stay until the batch ends, and a chain that may roll
back runs one row at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch
from transformers import (
    DynamicCache,
    DynamicLayer,
    LogitsProcessorList,
    MinPLogitsWarper,
    PreTrainedModel,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from loopfix.guards.base import GuardContext
from loopfix.guards.chain import GuardChain
from loopfix.guards.penalty import PenaltyGuard, PenaltyParams
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["DecodeEngine", "EngineResult", "draw", "eos_set", "sampler_warpers", "uniforms"]


@dataclass
class EngineResult:
    tokens: list[int]
    finish_reason: FinishReason
    guards: dict[str, Any] | None = None  # what the chain did (rescues, cut); None: no chain
    forward_tokens: int = 0  # tokens the model ran on for this request, prefills included
    top1: list[float] | None = None
    entropy: list[float] | None = None


_PARKED = 1 << 40
"""Chain row ids of rolled-back sequences waiting for a row: past any batch, so guards, which
rewrite only rows inside the logits they are given, leave them alone."""


@dataclass
class _Sequence:
    index: int
    prompt: list[int]
    seed: int
    output: list[int] = field(default_factory=list)
    forward_tokens: int = 0
    top1: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    parked: int | None = None  # chain row id (>= _PARKED) while waiting to be admitted again
    done: bool = False

    @property
    def context(self) -> list[int]:
        return self.prompt + self.output


def uniforms(seeds: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """One number in [0, 1) per (seed, position): splitmix64 of the pair, 53 bits."""
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
        z = seeds.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + positions.astype(
            np.uint64
        ) * np.uint64(0xD1B54A32D192ED03)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def draw(probs: torch.Tensor, u: np.ndarray) -> torch.Tensor:
    """Inverse-CDF sampling, one row per uniform: the first token whose cumulative
    probability exceeds u * total (a token of probability 0 is never chosen)."""
    cdf = probs.double().cumsum(dim=-1)
    total = cdf[:, -1:]
    target = torch.from_numpy(u).to(cdf.device)[:, None] * total
    index = torch.searchsorted(cdf, torch.minimum(target, total * (1 - 1e-12)), right=True)
    return index[:, 0].clamp(max=probs.shape[-1] - 1)


def eos_set(eos_token_id: int | Sequence[int] | None) -> frozenset[int]:
    if eos_token_id is None:
        return frozenset()
    if isinstance(eos_token_id, int):
        return frozenset({eos_token_id})
    return frozenset(eos_token_id)


def sampler_warpers(settings: DecodeSettings) -> LogitsProcessorList:
    """Temperature and truncation, as `model.generate` builds them (none under greedy)."""
    warpers = LogitsProcessorList()
    if not settings.greedy:
        warpers.append(TemperatureLogitsWarper(settings.temperature))
        if settings.top_k:
            warpers.append(TopKLogitsWarper(settings.top_k))
        if settings.top_p < 1.0:
            warpers.append(TopPLogitsWarper(settings.top_p))
        if settings.min_p:
            warpers.append(MinPLogitsWarper(settings.min_p))
    return warpers


def _sampler_chain(settings: DecodeSettings, vocab_size: int) -> GuardChain:
    """The sampler's own penalties, which run before any guard."""
    params = PenaltyParams(
        repetition=settings.repetition_penalty,
        presence=settings.presence_penalty,
        frequency=settings.frequency_penalty,
    )
    if params == PenaltyParams():
        return GuardChain([])
    return GuardChain([PenaltyGuard(params, GuardContext(vocab_size))])


def _mergeable(model: PreTrainedModel) -> bool:
    """Whether every cache layer is a plain full-attention one (rows can be cut and joined)."""
    cache = DynamicCache(config=model.config)
    return all(type(layer).__name__ == "DynamicLayer" for layer in cache.layers)


class _Batch:
    """The running rows: their KV cache, attention mask and next positions, kept in step."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.model = model
        self.cache = DynamicCache(config=model.config)
        self.mask = torch.zeros((0, 0), dtype=torch.long, device=model.device)
        self.positions = torch.zeros(0, dtype=torch.long, device=model.device)

    def __len__(self) -> int:
        return int(self.mask.shape[0])

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> Any:
        # Cache positions given, not derived: transformers would otherwise ask the cache for its
        # length every step (a measurable share of a small model's step on CPU).
        width = mask.shape[1]
        cache_position = torch.arange(width - ids.shape[1], width, device=ids.device)
        return self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            cache=self.cache,
            cache_position=cache_position,
            logits_to_keep=1,
        )

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
        logits = self._forward(ids, mask, positions).logits[:, -1, :].float()
        self.mask, self.positions = mask, positions[:, -1] + 1
        return logits

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        ones = torch.ones((len(self), 1), dtype=self.mask.dtype, device=self.mask.device)
        self.mask = torch.cat([self.mask, ones], dim=1)
        logits = self._forward(tokens[:, None], self.mask, self.positions[:, None])
        self.positions = self.positions + 1
        return cast(torch.Tensor, logits.logits[:, -1, :].float())

    def keep(self, rows: list[int]) -> None:
        """Drop every other row, and the columns no remaining row uses."""
        index = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.mask = self.mask.index_select(0, index)
        self.positions = self.positions.index_select(0, index)
        used = self.mask.any(dim=0).nonzero()
        start = int(used[0]) if len(used) else self.mask.shape[1]
        self.mask = self.mask[:, start:]
        for layer in _full_layers(self.cache):
            layer.keys = _keys(layer).index_select(0, index)[:, :, start:]
            layer.values = _values(layer).index_select(0, index)[:, :, start:]

    def join(self, other: _Batch) -> None:
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
            mine.keys = torch.cat([_pad_left(_keys(x), width, dim=2) for x in (mine, theirs)])
            mine.values = torch.cat([_pad_left(_values(x), width, dim=2) for x in (mine, theirs)])


def _full_layers(cache: DynamicCache) -> list[DynamicLayer]:
    """A mergeable batch's cache layers (all plain full-attention ones: see `_mergeable`)."""
    return cast(list[DynamicLayer], cache.layers)


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


class DecodeEngine:
    """Generates continuations for many prompts; see the module docstring.

    build_chain: a fresh guard chain for each `run` (one chain serves all rows); None: none.
    capture: also return per-step top-1 probability and entropy (nats) of the distribution
        after penalties and guards, before temperature and truncation.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        settings: DecodeSettings,
        eos_token_id: int | Sequence[int] | None,
        pad_token_id: int,
        batch_size: int = 16,
        build_chain: Callable[[], GuardChain] | None = None,
        capture: bool = False,
    ) -> None:
        self.model, self.settings, self.eos = model, settings, eos_set(eos_token_id)
        self.pad_id, self.capture = pad_token_id, capture
        self.build_chain = build_chain or (lambda: GuardChain([]))
        self.mergeable = _mergeable(model)
        rolls_back = "rescue" in self.build_chain().names
        self.batch_size = batch_size if self.mergeable or not rolls_back else 1

    @torch.inference_mode()
    def run(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int]
    ) -> Iterator[tuple[int, EngineResult]]:
        """Yield (prompt position, result) as each sequence ends."""
        state = _Run(self)
        state.waiting.extend(
            _Sequence(i, list(p), int(s))
            for i, (p, s) in enumerate(zip(prompts, seeds, strict=True))
        )
        while state.waiting or state.rows:
            if self.mergeable or not state.rows:
                state.admit()
            tokens = state.draw()
            finished, rolled = state.advance(tokens)
            for sequence, reason in finished:
                yield sequence.index, state.result(sequence, reason)
            state.settle(tokens, finished, rolled)


class _Run:
    """One `DecodeEngine.run`: the queue, the running rows and their shared batch."""

    def __init__(self, engine: DecodeEngine) -> None:
        self.engine, self.settings = engine, engine.settings
        self.waiting: deque[_Sequence] = deque()
        self.rows: list[_Sequence] = []
        self.batch = _Batch(engine.model)
        self.logits = torch.zeros(0)
        sampler = _sampler_chain(engine.settings, engine.model.config.vocab_size)
        self.chain = engine.build_chain()
        self.parts = (sampler, self.chain)  # both keep per-row state in step with the rows
        self.warpers = sampler_warpers(engine.settings)

    def admit(self) -> None:
        free = self.engine.batch_size - len(self.rows)
        if not self.waiting or (self.rows and free < max(1, self.engine.batch_size // 4)):
            return
        newcomers = [self.waiting.popleft() for _ in range(min(free, len(self.waiting)))]
        joining = _Batch(self.engine.model)
        fresh = joining.prefill([s.context for s in newcomers], self.engine.pad_id)
        self.batch.join(joining)
        for sequence in newcomers:
            row = len(self.rows)
            sequence.forward_tokens += len(sequence.context)
            if sequence.parked is None:
                for part in self.parts:
                    part.add(
                        row,
                        sequence.prompt,
                        temperature=self.settings.temperature,
                        seed=sequence.seed,
                    )
            else:
                for part in self.parts:
                    part.move(sequence.parked, row)
                sequence.parked = None
            self.rows.append(sequence)
        self.logits = torch.cat([self.logits, fresh]) if len(self.logits) else fresh

    def draw(self) -> torch.Tensor:
        sampler, chain = self.parts
        scores = chain.apply(sampler.apply(self.logits.clone()))
        if self.engine.capture:
            log_probs = torch.log_softmax(scores, dim=-1)
            probs = log_probs.exp()
            top1 = probs.max(dim=-1).values.tolist()
            # Masked tokens have p = 0 and log p = -inf; their 0 * -inf terms are dropped.
            entropy = (-(probs * log_probs).nan_to_num(0.0).sum(dim=-1)).tolist()
            for row, sequence in enumerate(self.rows):
                if not sequence.done:
                    sequence.top1.append(top1[row])
                    sequence.entropy.append(entropy[row])
        if self.settings.greedy:
            return scores.argmax(dim=-1).cpu()
        ids = torch.zeros((len(self.rows), 1), dtype=torch.long)  # the warpers ignore ids
        probs = torch.softmax(self.warpers(cast(torch.LongTensor, ids), scores), dim=-1)
        seeds = np.array([s.seed for s in self.rows], dtype=np.uint64)
        positions = np.array([len(s.output) for s in self.rows], dtype=np.uint64)
        return draw(probs, uniforms(seeds, positions)).cpu()

    def advance(
        self, tokens: torch.Tensor
    ) -> tuple[list[tuple[_Sequence, FinishReason]], list[_Sequence]]:
        """Append each row's token: (ended rows with why, rolled-back rows)."""
        finished: list[tuple[_Sequence, FinishReason]] = []
        rolled: list[_Sequence] = []
        chain = self.chain
        for row, (sequence, token) in enumerate(zip(self.rows, tokens.tolist(), strict=True)):
            if sequence.done:  # fixed batches keep ended rows until the batch ends
                continue
            sequence.output.append(token)
            for part in self.parts:
                part.extend(row, [token])
            if token in self.engine.eos:
                finished.append((sequence, "stop"))
            elif chain.stopped(row):
                finished.append((sequence, "repetition"))
            elif (length := chain.pending_rollbacks().get(row)) is not None:
                for part in self.parts:
                    part.rollback(row, length)
                del sequence.output[length:], sequence.top1[length:], sequence.entropy[length:]
                rolled.append(sequence)
            elif len(sequence.output) >= self.settings.max_new_tokens:
                finished.append((sequence, "length"))
        return finished, rolled

    def result(self, sequence: _Sequence, reason: FinishReason) -> EngineResult:
        sequence.done = True
        record = self.chain.record(self.rows.index(sequence)) if self.chain else None
        return EngineResult(
            sequence.output,
            reason,
            guards=record,
            forward_tokens=sequence.forward_tokens,
            top1=sequence.top1 if self.engine.capture else None,
            entropy=sequence.entropy if self.engine.capture else None,
        )

    def settle(
        self,
        tokens: torch.Tensor,
        finished: list[tuple[_Sequence, FinishReason]],
        rolled: list[_Sequence],
    ) -> None:
        """Step the rows that go on; free ended rows and requeue rolled-back ones."""
        leaving = {id(s) for s, _ in finished} | {id(s) for s in rolled}
        if self.engine.mergeable:
            keep = [row for row, s in enumerate(self.rows) if id(s) not in leaving]
            self._release(finished, rolled)
            if len(keep) < len(self.rows):
                self.batch.keep(keep)
                self.rows = [self.rows[row] for row in keep]
                tokens = tokens[keep]
        elif rolled or all(s.done for s in self.rows):
            # A fixed batch ends when every row has ended; a rollback (batch of one) re-prefills.
            self._release([(s, "stop") for s in self.rows if s.done], rolled)
            self.batch, self.rows = _Batch(self.engine.model), []
        if not self.rows:
            self.logits = torch.zeros(0)
            return
        self.logits = self.batch.step(tokens.to(self.engine.model.device))
        for sequence in self.rows:
            sequence.forward_tokens += not sequence.done

    def _release(
        self, finished: list[tuple[_Sequence, FinishReason]], rolled: list[_Sequence]
    ) -> None:
        """Drop the chain rows of ended sequences, park rolled-back ones at the queue's front,
        and renumber the remaining rows as the batch shrinks."""
        position = {id(s): row for row, s in enumerate(self.rows)}
        for sequence, _ in finished:
            for part in self.parts:
                part.remove(position[id(sequence)])
        for sequence in reversed(rolled):
            sequence.parked = _PARKED + sequence.index
            for part in self.parts:
                part.move(position[id(sequence)], sequence.parked)
            self.waiting.appendleft(sequence)
        gone = {id(s) for s, _ in finished} | {id(s) for s in rolled}
        target = 0
        for row, sequence in enumerate(self.rows):
            if id(sequence) in gone:
                continue
            if row != target:
                for part in self.parts:
                    part.move(row, target)
            target += 1
