"""Decode-time guards: framework-neutral cores with thin HF and vLLM adapters.

`parse_guards("rescue+dry", {"dry.multiplier": 0.8}, context)` builds a `GuardChain`; the HF
adapters (`GuardLogitsProcessor`, `GuardStoppingCriteria`) run it inside `model.generate`, and
`generate_guarded` runs it in a loop that can roll back (rescue). The vLLM adapter lives in
`loopfix.guards.vllm` (imported only when vLLM is installed).
"""

from loopfix.guards.base import Guard, GuardContext, GuardError, GuardParams, Row
from loopfix.guards.chain import GuardChain
from loopfix.guards.dry_reference import dry_penalties, dry_repeat_lengths
from loopfix.guards.hf import (
    GuardLogitsProcessor,
    GuardStoppingCriteria,
    processor_factory,
    row_seed,
)
from loopfix.guards.hf_loop import GuardedGeneration, generate_guarded
from loopfix.guards.registry import (
    GUARDS,
    guard_names,
    parse_guard_args,
    parse_guards,
    validate_params,
)
from loopfix.guards.suffix_automaton import SuffixAutomaton

__all__ = [
    "GUARDS",
    "Guard",
    "GuardChain",
    "GuardContext",
    "GuardError",
    "GuardLogitsProcessor",
    "GuardParams",
    "GuardStoppingCriteria",
    "GuardedGeneration",
    "Row",
    "SuffixAutomaton",
    "dry_penalties",
    "dry_repeat_lengths",
    "generate_guarded",
    "guard_names",
    "parse_guard_args",
    "parse_guards",
    "processor_factory",
    "row_seed",
    "validate_params",
]
