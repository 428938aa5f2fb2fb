"""The vLLM V1 adapter: one `LogitsProcessor` that serves every loopfix guard, per request.

Load it with `LLM(logits_processors=[LoopfixLogitsProcessor])` or
`--logits-processors loopfix.guards.vllm:LoopfixLogitsProcessor`; a request opts in through
`SamplingParams.extra_args` (REST: `vllm_xargs`), flat so that REST can carry it:
    {"loopfix_guards": "rescue+dry", "dry.multiplier": 0.8, "rescue.budget": 2}
`validate_params` rejects an unknown guard or parameter at admission (HTTP 400).
`vllm_guards(spec, guard_args)` turns a loopfix spec into what a request carries: these
`extra_args` and, for `cut`, vLLM's native `RepetitionDetectionParams` (`repetition_detection`).

What differs from the HF path:
- vLLM cannot take tokens back, so `rescue` bans the token that would continue the loop at
  detection time instead of rolling back. With `rescue.escape=think_end` a loop inside a think
  block forces `</think>` at detection instead (off when the vocabulary lacks the markers).
- `cut` is not a processor: it maps to `SamplingParams.repetition_detection`, which ends the
  request with finish_reason "repetition" (`repetition_detection` below says how faithfully).
- vLLM runs custom processors that can change the argmax before its own repetition / presence /
  frequency penalties (HF runs its repetition penalty first); the temperature guards see the
  request's own temperature, as in HF.
- What a guard did (rescues) stays inside the engine: a processor has no per-request output.
vLLM is imported only by this module (and lazily by `loopfix.backends.vllm`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from vllm.sampling_params import RepetitionDetectionParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from loopfix.guards.args import GuardArg
from loopfix.guards.base import Guard, GuardContext, GuardError, GuardParams
from loopfix.guards.cut import CutGuard, CutParams
from loopfix.guards.record import CutRecord
from loopfix.guards.registry import (
    GUARDS,
    guard_names,
    spec_args,
    split_guard_args,
    validate_params,
)
from loopfix.guards.rescue import RescueGuard

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

__all__ = [
    "GUARDS_KEY",
    "LoopfixLogitsProcessor",
    "VLLMGuards",
    "cut_record",
    "repetition_detection",
    "request_guards",
    "vllm_guards",
]

GUARDS_KEY = "loopfix_guards"


@dataclass(frozen=True)
class VLLMGuards:
    """A validated loopfix guard spec, as a vLLM request carries it.

    spec: the guards in canonical order ("none" for none).
    extra_args: `SamplingParams.extra_args` for `LoopfixLogitsProcessor`; None when no guard
        needs the processor (then the engine need not load it).
    repetition_detection: vLLM's native cut, when `cut` is in the spec.
    """

    spec: str
    extra_args: dict[str, GuardArg] | None
    repetition_detection: RepetitionDetectionParams | None


def vllm_guards(spec: str, guard_args: Mapping[str, GuardArg] | None = None) -> VLLMGuards:
    """Validate `spec` and `guard_args` ("guard.parameter" -> value) and map them onto vLLM.

    Every mistake is a GuardError that names the guard and the parameter.
    """
    names, by_guard = spec_args(spec, guard_args)
    served = [name for name in names if name != CutGuard.name]
    extra_args: dict[str, GuardArg] | None = None
    if served:
        extra_args = {GUARDS_KEY: "+".join(served)}
        for name in served:
            extra_args |= {f"{name}.{key}": value for key, value in by_guard.get(name, {}).items()}
        request_guards(extra_args)  # what the processor will read back, checked now
    repetition = None
    if CutGuard.name in names:
        cut = validate_params(CutGuard.name, by_guard.get(CutGuard.name, {}))
        assert isinstance(cut, CutParams)
        repetition = repetition_detection(cut)
    return VLLMGuards("+".join(names) or "none", extra_args, repetition)


def repetition_detection(params: CutParams) -> RepetitionDetectionParams:
    """loopfix's `cut` as vLLM's repetition detection, as close as vLLM's rule allows.

    vLLM ends a request when its output ends in `min_count` equal copies of a pattern whose
    size is in [min_pattern_size, max_pattern_size]; loopfix's monitor, when the output ends in
    a p-periodic run (p <= max_period) covering max(min_repeats * p, min_span) tokens. A
    p-periodic run is also k*p-periodic, so with min_count = min_repeats and the smallest size
    s = ceil(min_span / min_repeats), vLLM stops a loop of period p >= s at exactly loopfix's
    token, and one of period p < s at min_repeats whole copies of the smallest multiple of p
    that is >= s: later by fewer than min_repeats * p tokens. The largest size,
    max(max_period, 2s - 1), keeps every multiple needed for p <= max_period in range (it
    exceeds max_period only when max_period < 2s - 1).
    """
    shortest = math.ceil(params.min_span / params.min_repeats)
    return RepetitionDetectionParams(
        max_pattern_size=max(params.max_period, 2 * shortest - 1),
        min_pattern_size=shortest,
        min_count=params.min_repeats,
    )


def cut_record(tokens: Sequence[int], repetition: RepetitionDetectionParams) -> CutRecord:
    """{"position", "period"} of the repeat vLLM stopped on (as the HF `cut` records it).

    period: the smallest period of the stopping run (period 0: no run of `repetition`'s shape
    ends `tokens`). The run's smallest period divides the pattern size vLLM matched (two
    periods that fit twice in a run have a common divisor that is one too).
    """
    output = list(tokens)
    for size in range(max(repetition.min_pattern_size, 1), repetition.max_pattern_size + 1):
        span = size * repetition.min_count
        if span > len(output):
            break
        run = output[-span:]
        if run[size:] == run[:-size]:
            period = next(p for p in range(1, size + 1) if size % p == 0 and run[p:] == run[:-p])
            return {"position": len(output), "period": period}
    return {"position": len(output), "period": 0}


def request_guards(extra_args: Mapping[str, GuardArg] | None) -> dict[str, GuardParams]:
    """The guards a request's `extra_args` ask for, with their validated parameters ({} when
    none); keys that name no guard belong to others and are left alone."""
    extra = extra_args or {}
    spec = extra.get(GUARDS_KEY)
    if spec is None:
        return {}
    if not isinstance(spec, str):
        raise GuardError(f"{GUARDS_KEY} must be a string like 'rescue+dry', got {spec!r}")
    names = guard_names(spec)
    if CutGuard.name in names:
        raise GuardError(
            "guard 'cut' is not served through vLLM's logits processors: "
            "use SamplingParams.repetition_detection (vLLM's native cut; "
            "loopfix.guards.vllm.repetition_detection maps cut's parameters onto it)"
        )
    known = {f"{name}." for name in GUARDS}
    guard_args = {k: v for k, v in extra.items() if any(k.startswith(p) for p in known)}
    by_guard = split_guard_args(guard_args)
    for name in by_guard:
        if name not in names:
            raise GuardError(f"argument for guard {name!r}, which is not in {spec!r}")
    return {name: validate_params(name, by_guard.get(name, {})) for name in names}


class LoopfixLogitsProcessor(LogitsProcessor):
    """Every loopfix guard in one vLLM processor; each request enables its own subset."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        request_guards(sampling_params.extra_args)

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        context = _context(vllm_config)
        self.guards: list[Guard] = [
            RescueGuard(None, context, rollback=False) if g is RescueGuard else g(None, context)
            for name, g in GUARDS.items()
            if g is not CutGuard
        ]
        self._by_name = {guard.name: guard for guard in self.guards}
        self._outputs: dict[int, tuple[list[int], int]] = {}  # row -> (live output list, fed)

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is not None:
            self._reshape(batch_update)
        for row, (output, fed) in self._outputs.items():
            if len(output) > fed:
                for guard in self.guards:
                    guard.extend(row, output[fed:])
                self._outputs[row] = (output, len(output))

    def _reshape(self, update: BatchUpdate) -> None:
        """Apply vLLM's batch changes in its order: removed, added, moved."""
        for row in update.removed:
            self._forget(row)
        for row, params, prompt, output in update.added:
            self._forget(row)
            wanted = request_guards(params.extra_args)
            for name, guard_params in wanted.items():
                self._by_name[name].add(
                    row, prompt or [], output, guard_params, params.temperature, params.seed
                )
            if wanted:
                self._outputs[row] = (output, len(output))
        for source, target, direction in update.moved:
            for guard in self.guards:
                if direction == MoveDirectionality.SWAP:
                    guard.swap(source, target)
                else:
                    guard.move(source, target)
            _move(self._outputs, source, target, direction == MoveDirectionality.SWAP)

    def _forget(self, row: int) -> None:
        self._outputs.pop(row, None)
        for guard in self.guards:
            guard.remove(row)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self._outputs:  # no request asked for a guard
            return logits
        for guard in self.guards:
            if guard.rows:
                logits = guard.apply(logits)
        return logits


def _move(table: dict[int, tuple[list[int], int]], source: int, target: int, swap: bool) -> None:
    first, second = table.pop(source, None), table.pop(target, None)
    if first is not None:
        table[target] = first
    if swap and second is not None:
        table[source] = second


def _context(vllm_config: VllmConfig) -> GuardContext:
    model_config = vllm_config.model_config
    vocab_size = model_config.get_vocab_size()
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_config.tokenizer)
    except (OSError, ValueError):  # no tokenizer files: guards that need text will say so
        return GuardContext(vocab_size)
    return GuardContext.from_tokenizer(tokenizer, vocab_size)
