"""`run_consistency`: why the same prompt gives different outputs, one check per factor.

Steps:
1. Refuse what cannot be checked before loading anything (a URL as MODEL has no local weights:
   every check is reported skipped, with that reason).
2. Load the model (unless given) and render the suite's prompts (the chat template when the
   tokenizer has one, or when `template` demands it: then a model without one is an error).
3. Run the asked checks in the fixed order of `CHECK_NAMES` on one `Session`, so later checks
   reuse earlier runs and `loop_stability`, last, sees every run the others made.
4. Return a `ConsistencyResult` (write it with `write_consistency`).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import transformers
from transformers import PreTrainedModel

from loopfix._version import __version__
from loopfix.backends.base import dtype_name
from loopfix.consistency.backend import check_backend
from loopfix.consistency.batch import check_batch_invariance
from loopfix.consistency.config import CHECK_NAMES, ConsistencyConfig, ConsistencyError
from loopfix.consistency.context import check_context
from loopfix.consistency.determinism import check_determinism
from loopfix.consistency.loops import check_loop_stability
from loopfix.consistency.pool import check_sampling_pool
from loopfix.consistency.precision import check_precision
from loopfix.consistency.result import CheckResult, ConsistencyResult, Environment
from loopfix.consistency.seeds import check_seed_sensitivity
from loopfix.consistency.session import Prompt, Session
from loopfix.cpu import cpu_flags
from loopfix.models import load_model
from loopfix.suites import SuiteItem, load_suite
from loopfix.suites.render import prompt_ids, stop_texts
from loopfix.urls import is_url

__all__ = ["CHECKS", "run_consistency"]

CHECKS: dict[str, Callable[[Session], CheckResult]] = {
    "determinism": check_determinism,
    "batch_invariance": check_batch_invariance,
    "seed_sensitivity": check_seed_sensitivity,
    "sampling_pool": check_sampling_pool,
    "context": check_context,
    "precision": check_precision,
    "backend": check_backend,
    "loop_stability": check_loop_stability,
}
assert tuple(CHECKS) == CHECK_NAMES


def _cpu_flags() -> list[str]:
    """The CPU features that decide kernels and vLLM's default dtype (Linux only)."""
    prefixes = ("avx512_bf16", "amx", "avx512f", "avx2")
    return sorted(f for f in cpu_flags() if f.startswith(prefixes))


def environment(model: PreTrainedModel | None) -> Environment:
    return Environment(
        loopfix=__version__,
        torch=torch.__version__,
        transformers=transformers.__version__,
        python=platform.python_version(),
        machine=platform.machine(),
        cpu_flags=_cpu_flags(),
        torch_threads=torch.get_num_threads(),
        device=None if model is None else str(model.device),
        dtype=None if model is None else dtype_name(model.dtype),
    )


def _prompts(
    items: list[SuiteItem], tokenizer: Any, template: bool | None
) -> tuple[list[Prompt], bool]:
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if template and not has_template:
        raise ConsistencyError(
            "template: the model's tokenizer has no chat template (use --no-template)"
        )
    use = has_template if template is None else template
    prompts = []
    for item in items:
        text = (
            item.prompt
            if item.prompt is not None
            else (item.messages or [{}])[-1].get("content", "")
        )
        if use or not has_template:  # as a scan renders it: chat template or completion
            ids, stop = prompt_ids(item, tokenizer), stop_texts(item, tokenizer)
        elif item.messages is not None:
            raise ConsistencyError(
                f"item {item.id!r} is a chat (messages); it needs the chat template"
            )
        else:
            ids, stop = list(tokenizer(item.prompt or "")["input_ids"]), ()
        prompts.append(Prompt(item.id, ids, text, stop))
    return prompts, use


def _skipped_everywhere(config: ConsistencyConfig, reason: str) -> ConsistencyResult:
    checks = [CheckResult(name, "skipped", reason, reason=reason) for name in config.checks]
    return ConsistencyResult(config.model, config.suite, 0, config, environment(None), checks)


def run_consistency(
    config: ConsistencyConfig,
    model: PreTrainedModel | None = None,
    tokenizer: Any = None,
    on_check: Callable[[CheckResult], None] | None = None,
) -> ConsistencyResult:
    """Run `config.checks` (see the module docstring); `model`/`tokenizer`: an already loaded
    model (`config.model` then only names it, and vLLM needs it to be a folder)."""
    if is_url(config.model):
        return _skipped_everywhere(
            config, "MODEL is a URL: no local weights to compare with (give it as --url)"
        )
    if model is None or tokenizer is None:
        model, tokenizer = load_model(config.model)
    items = load_suite(config.suite, config.n, config.seed)
    prompts, template_used = _prompts(items, tokenizer, config.template)
    session = Session(model, tokenizer, prompts, config, template_used)
    results = []
    for name in CHECK_NAMES:
        if name not in config.checks:
            continue
        started = time.perf_counter()
        result = replace(CHECKS[name](session), seconds=round(time.perf_counter() - started, 2))
        results.append(result)
        if on_check is not None:
            on_check(result)
    return ConsistencyResult(
        config.model,
        config.suite,
        len(prompts),
        config,
        environment(model),
        results,
    )
