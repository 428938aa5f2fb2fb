"""Decode-time guards: framework-neutral cores with thin HF and vLLM adapters.

`guard_processor("rescue+dry", tokenizer)` gives the keyword arguments that run guards inside a
user's own `model.generate`; `parse_guards("rescue+dry", {"dry.multiplier": 0.8}, context)` builds
the `GuardChain` itself, which loopfix's decode engine (`loopfix.engine`, which can also
roll back for rescue) runs in scans and comparisons. The vLLM adapter lives in
`loopfix.guards.vllm` (imported only when vLLM is installed).
"""

from typing import TYPE_CHECKING

from loopfix.lazy import lazy_exports

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

# Imported on first use: a settings model that carries guard arguments (`guards.args`) must not
# load torch with this package.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "GUARDS": "loopfix.guards.registry",
        "GuardChain": "loopfix.guards.chain",
        "GuardContext": "loopfix.guards.base",
        "GuardError": "loopfix.guards.base",
        "GuardLogitsProcessor": "loopfix.guards.hf",
        "GuardStoppingCriteria": "loopfix.guards.hf",
        "guard_processor": "loopfix.guards.hf",
        "parse_guard_args": "loopfix.guards.registry",
        "parse_guards": "loopfix.guards.registry",
    },
)

if TYPE_CHECKING:
    from loopfix.guards.base import GuardContext, GuardError
    from loopfix.guards.chain import GuardChain
    from loopfix.guards.hf import GuardLogitsProcessor, GuardStoppingCriteria, guard_processor
    from loopfix.guards.registry import GUARDS, parse_guard_args, parse_guards
