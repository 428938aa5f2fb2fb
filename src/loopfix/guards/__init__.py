"""Decode-time guards: framework-neutral cores with thin HF and vLLM adapters.

`parse_guards("rescue+dry", {"dry.multiplier": 0.8}, context)` builds a `GuardChain`; the HF
adapters (`GuardLogitsProcessor`, `GuardStoppingCriteria`) run it inside a user's own
`model.generate`; loopfix's decode engine (`loopfix.backends.engine`, which can also roll back
for rescue) runs it in scans and comparisons. The vLLM adapter lives in `loopfix.guards.vllm`
(imported only when vLLM is installed).
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
    "Row",
    "SuffixAutomaton",
    "dry_penalties",
    "dry_repeat_lengths",
    "guard_names",
    "parse_guard_args",
    "parse_guards",
    "processor_factory",
    "row_seed",
    "validate_params",
]
