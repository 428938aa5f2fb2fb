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
3. Feed the token to the sampler and the chain; a row ends at EOS, at one of its request's stop
   texts (`engine.stops`: the newest tokens decoded), at the cap, or when `cut` stopped it
   ("repetition"). Ended rows leave the batch at once (their cache rows dropped).
4. When `rescue` asks for a rollback, the row leaves the batch with its kept tokens and is
   admitted again at the next refill (its prefix re-prefilled; the chain keeps its ledger).
5. Everyone else runs one forward step on the token just drawn.

A sample therefore depends only on its prompt, its seed and the settings, not on which requests
share its batch (up to float rounding of batched matmuls), and two guard chains that leave a
step's logits alone draw the same token there: comparisons are paired at every temperature.
A Llama-architecture model prefills and decodes through its fused forward (`engine.fast.
llama_fused`: transformers' math in fewer calls, its linear layers on packed oneDNN weights,
on compiled CPU kernels where a C compiler builds them, while no forward hook asks for the
model's own modules); any other runs its own forward with its linear layers switched to packed
oneDNN weights for that call only (`engine.fast.onednn.accelerate`: faster than MKL's float32 GEMM
and than oneDNN on plain weights on the CPUs measured). The engine changes nothing of the model
it is given: between its forward calls, and after, every module is the one it was. Caches that
cannot be merged or trimmed row by row (sliding-window or linear-attention layers) run in fixed
batches instead: ended rows stay until the batch ends, and a chain that may roll back runs one
row at a time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch
from transformers import PreTrainedModel

from loopfix.engine.kv_batch import KVBatch, mergeable
from loopfix.engine.sampling import draw, sampler_penalties, sampler_warpers, uniforms
from loopfix.engine.stops import Decode, stop_found
from loopfix.engine.warning import StepWarning
from loopfix.guards.chain import GuardChain
from loopfix.guards.record import GuardRecord
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["DecodeEngine", "EngineResult", "eos_set"]


@dataclass
class EngineResult:
    tokens: list[int]
    finish_reason: FinishReason
    guards: GuardRecord | None = None  # what the chain did (rescues, cut); None: no chain
    forward_tokens: int = 0  # tokens the model ran on for this request, prefills included
    top1: list[float] | None = None
    entropy: list[float] | None = None
    stop: str | None = None  # the stop text that ended it
    warning_step: int | None = None  # the output position where the early warning first fired


_PARKED = 1 << 40
"""Chain row ids of rolled-back sequences waiting for a row: past any batch, so guards, which
rewrite only rows inside the logits they are given, leave them alone."""


@dataclass
class _Sequence:
    index: int
    prompt: list[int]
    seed: int
    stops: tuple[str, ...] = ()
    output: list[int] = field(default_factory=list)
    forward_tokens: int = 0
    top1: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    projected: list[float] = field(default_factory=list)  # the warning's number per step
    warning_step: int | None = None
    parked: int | None = None  # chain row id (>= _PARKED) while waiting to be admitted again
    done: bool = False
    stopped_by: str | None = None  # the stop text that ended it

    @property
    def context(self) -> list[int]:
        return self.prompt + self.output


def eos_set(eos_token_id: int | Sequence[int] | None) -> frozenset[int]:
    if eos_token_id is None:
        return frozenset()
    if isinstance(eos_token_id, int):
        return frozenset({eos_token_id})
    return frozenset(eos_token_id)


class DecodeEngine:
    """Generates continuations for many prompts; see the module docstring.

    build_chain: a fresh guard chain for each `run` (one chain serves all rows); None: none.
    capture: also return per-step top-1 probability and entropy (nats) of the distribution
        after penalties and guards, before temperature and truncation.
    decode: token ids to text, for requests with stop texts.
    warning: an early warning read from the model's hidden states and the step's top-1 and
        entropy (`engine.warning`); each result says where it first fired, and the guard chain
        is told (an `early` rescue then acts on less evidence).
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
        decode: Decode | None = None,
        warning: StepWarning | None = None,
    ) -> None:
        self.model, self.settings, self.eos = model, settings, eos_set(eos_token_id)
        self.pad_id, self.capture, self.decode = pad_token_id, capture, decode
        self.warning = warning
        self.build_chain = build_chain or (lambda: GuardChain([]))
        self.mergeable = mergeable(model)
        rolls_back = "rescue" in self.build_chain().names
        self.batch_size = batch_size if self.mergeable or not rolls_back else 1

    @torch.inference_mode()
    def run(
        self,
        prompts: Sequence[Sequence[int]],
        seeds: Sequence[int],
        stops: Sequence[Sequence[str]] | None = None,
    ) -> Iterator[tuple[int, EngineResult]]:
        """Yield (prompt position, result) as each sequence ends.

        stops: each prompt's stop texts (`engine.stops`); they need the engine's `decode`.
        """
        stops = stops if stops is not None else [()] * len(prompts)
        if self.decode is None and any(stops):
            raise ValueError("stop texts need a DecodeEngine built with decode")
        state = _Run(self)
        state.waiting.extend(
            _Sequence(i, list(p), int(s), tuple(texts))
            for i, (p, s, texts) in enumerate(zip(prompts, seeds, stops, strict=True))
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
        self.batch = self._new_batch()
        self.logits = torch.zeros(0)
        self.states: torch.Tensor | None = None  # the warning's hidden state per row
        sampler = sampler_penalties(engine.settings, engine.model.config.vocab_size)
        self.chain = engine.build_chain()
        self.parts = (sampler, self.chain)  # both keep per-row state in step with the rows
        self.warpers = sampler_warpers(engine.settings)

    def _new_batch(self) -> KVBatch:
        warning = self.engine.warning
        return KVBatch(self.engine.model, None if warning is None else warning.layer)

    def admit(self) -> None:
        free = self.engine.batch_size - len(self.rows)
        if not self.waiting or (self.rows and free < max(1, self.engine.batch_size // 4)):
            return
        newcomers = [self.waiting.popleft() for _ in range(min(free, len(self.waiting)))]
        joining = self._new_batch()
        fresh = joining.prefill([s.context for s in newcomers], self.engine.pad_id)
        if joining.states is not None:
            running = self.states if len(self.logits) else None
            joined = [joining.states] if running is None else [running, joining.states]
            self.states = torch.cat(joined)
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
        # The step's logits serve this draw only, so the penalties and guards may write them.
        scores = chain.apply(sampler.apply(self.logits))
        if self.engine.capture or self.engine.warning is not None:
            log_probs = torch.log_softmax(scores, dim=-1)
            probs = log_probs.exp()
            top1 = probs.max(dim=-1).values.tolist()
            # Masked tokens have p = 0 and log p = -inf; their 0 * -inf terms are dropped.
            entropy = (-(probs * log_probs).nan_to_num(0.0).sum(dim=-1)).tolist()
            for row, sequence in enumerate(self.rows):
                if not sequence.done:
                    sequence.top1.append(top1[row])
                    sequence.entropy.append(entropy[row])
            if self.engine.warning is not None:
                self._warn(self.engine.warning)
        if self.settings.greedy:
            # argmax's first maximum, as `max` finds it: 3x faster on CPU over a 49k vocabulary.
            return scores.max(dim=-1).indices.cpu()
        ids = torch.zeros((len(self.rows), 1), dtype=torch.long)  # the warpers ignore ids
        probs = torch.softmax(self.warpers(cast(torch.LongTensor, ids), scores), dim=-1)
        seeds = np.array([s.seed for s in self.rows], dtype=np.uint64)
        positions = np.array([len(s.output) for s in self.rows], dtype=np.uint64)
        return draw(probs, uniforms(seeds, positions)).cpu()

    def _warn(self, warning: StepWarning) -> None:
        """Read the warning after this step's signals; a row's first firing is kept."""
        assert self.states is not None  # every prefill and step keeps them for the warning
        projected = warning.project(self.states.cpu().numpy()).tolist()
        for row, sequence in enumerate(self.rows):
            if sequence.done:
                continue
            sequence.projected.append(projected[row])
            if sequence.warning_step is None:
                p = warning.step_probability(sequence.projected, sequence.top1, sequence.entropy)
                if p >= warning.threshold:
                    sequence.warning_step = len(sequence.output)
                    self.chain.warn(row)  # an `early` rescue acts on less evidence from now

    def advance(
        self, tokens: torch.Tensor
    ) -> tuple[list[tuple[_Sequence, FinishReason]], list[_Sequence]]:
        """Append each row's token: (ended rows with why, rolled-back rows)."""
        finished: list[tuple[_Sequence, FinishReason]] = []
        rolled: list[_Sequence] = []
        chain = self.chain
        # Fixed batches keep ended rows until the batch ends; they take no more tokens.
        live = [
            (row, sequence, token)
            for row, (sequence, token) in enumerate(zip(self.rows, tokens.tolist(), strict=True))
            if not sequence.done
        ]
        for row, sequence, token in live:
            sequence.output.append(token)
            for part in self.parts:
                part.extend(row, [token])
        pending = chain.pending_rollbacks()  # each row's depends on its own tokens only
        for row, sequence, token in live:
            if token in self.engine.eos:
                finished.append((sequence, "stop"))
            elif sequence.stops and self._stop(sequence):
                finished.append((sequence, "stop"))
            elif chain.stopped(row):
                finished.append((sequence, "repetition"))
            elif (length := pending.get(row)) is not None:
                for part in self.parts:
                    part.rollback(row, length)
                del sequence.output[length:], sequence.top1[length:], sequence.entropy[length:]
                del sequence.projected[length:]
                rolled.append(sequence)
            elif len(sequence.output) >= self.settings.max_new_tokens:
                finished.append((sequence, "length"))
        return finished, rolled

    def _stop(self, sequence: _Sequence) -> bool:
        assert self.engine.decode is not None  # `run` refuses stop texts without it
        sequence.stopped_by = stop_found(sequence.output, sequence.stops, self.engine.decode)
        return sequence.stopped_by is not None

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
            stop=sequence.stopped_by,
            warning_step=sequence.warning_step,
        )

    def settle(
        self,
        tokens: torch.Tensor,
        finished: list[tuple[_Sequence, FinishReason]],
        rolled: list[_Sequence],
    ) -> None:
        """Step the rows that go on; free ended rows and requeue rolled-back ones."""
        if self.engine.mergeable:
            leaving = {id(s) for s, _ in finished} | {id(s) for s in rolled}
            keep = [row for row, s in enumerate(self.rows) if id(s) not in leaving]
            self._release(finished, rolled, keep)
            if len(keep) < len(self.rows):
                self.batch.keep(keep)
                self.rows = [self.rows[row] for row in keep]
                tokens = tokens[keep]
        elif rolled or all(s.done for s in self.rows):
            # A fixed batch ends when every row has ended; a rollback (batch of one) re-prefills.
            self._release([(s, "stop") for s in self.rows if s.done], rolled, [])
            self.batch, self.rows = self._new_batch(), []
        if not self.rows:
            self.logits, self.states = torch.zeros(0), None
            return
        self.logits = self.batch.step(tokens.to(self.engine.model.device))
        self.states = self.batch.states
        for sequence in self.rows:
            sequence.forward_tokens += not sequence.done

    def _release(
        self,
        finished: list[tuple[_Sequence, FinishReason]],
        rolled: list[_Sequence],
        keep: list[int],
    ) -> None:
        """Drop the chain rows of ended sequences, park rolled-back ones at the queue's front,
        and renumber the kept rows (old row numbers, ascending) as the batch shrinks."""
        position = {id(s): row for row, s in enumerate(self.rows)}
        for sequence, _ in finished:
            for part in self.parts:
                part.remove(position[id(sequence)])
        for sequence in reversed(rolled):
            sequence.parked = _PARKED + sequence.index
            for part in self.parts:
                part.move(position[id(sequence)], sequence.parked)
            self.waiting.appendleft(sequence)
        for target, row in enumerate(keep):
            if row != target:
                for part in self.parts:
                    part.move(row, target)
