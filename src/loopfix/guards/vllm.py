"""The vLLM V1 adapter: one `LogitsProcessor` that serves every loopfix guard, per request.

Load it with `LLM(logits_processors=[LoopfixLogitsProcessor])` or
`--logits-processors loopfix.guards.vllm:LoopfixLogitsProcessor`; a request opts in through
`SamplingParams.extra_args` (REST: `vllm_xargs`), flat so that REST can carry it:
    {"loopfix_guards": "rescue+dry", "dry.multiplier": 0.8, "rescue.budget": 2}
`validate_params` rejects an unknown guard or parameter at admission (HTTP 400).

What differs from the HF path:
- vLLM cannot take tokens back, so `rescue` bans the token that would continue the loop at
  detection time instead of rolling back; `cut` is refused: use vLLM's native
  `SamplingParams.repetition_detection`, which ends the request with finish_reason "repetition".
- vLLM runs custom processors that can change the argmax before its own repetition / presence /
  frequency penalties (HF runs its repetition penalty first); the temperature guards see the
  request's own temperature, as in HF.
vLLM is imported only by this module; nothing else in loopfix needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from loopfix.guards.base import Guard, GuardContext, GuardError, GuardParams
from loopfix.guards.cut import CutGuard
from loopfix.guards.registry import GUARDS, guard_names, split_guard_args, validate_params
from loopfix.guards.rescue import RescueGuard

if TYPE_CHECKING:
    from vllm import SamplingParams
    from vllm.config import VllmConfig

__all__ = ["GUARDS_KEY", "LoopfixLogitsProcessor", "request_guards"]

GUARDS_KEY = "loopfix_guards"


def request_guards(extra_args: dict[str, Any] | None) -> dict[str, GuardParams]:
    """The guards a request asks for, with their validated parameters ({} when none)."""
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
            "use SamplingParams.repetition_detection (vLLM's native cut)"
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


def _move(table: dict[int, Any], source: int, target: int, swap: bool) -> None:
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
