"""Decode-time guards: framework-neutral cores with thin HF and vLLM adapters.

`guard_processor("rescue+dry", tokenizer)` gives the keyword arguments that run guards inside a
user's own `model.generate`; `parse_guards("rescue+dry", {"dry.multiplier": 0.8}, context)` builds
the `GuardChain` itself, which loopfix's decode engine (`loopfix.engine`, which can also
roll back for rescue) runs in scans and comparisons. The vLLM adapter lives in
`loopfix.guards.vllm` (imported only when vLLM is installed).
"""

from loopfix.guards.base import GuardContext, GuardError
from loopfix.guards.chain import GuardChain
from loopfix.guards.hf import GuardLogitsProcessor, GuardStoppingCriteria, guard_processor
from loopfix.guards.registry import GUARDS, parse_guard_args, parse_guards

__all__ = [
    "GUARDS",
    "GuardChain",
    "GuardContext",
    "GuardError",
    "GuardLogitsProcessor",
    "GuardStoppingCriteria",
    "guard_processor",
    "parse_guard_args",
    "parse_guards",
]
