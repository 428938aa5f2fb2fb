"""context: do prompt and output fit what the model attends to, and does a long preamble move
the output?

Numbers: the window (max positions), a sliding attention window when the config sets one for
some layer, the tokenizer's own length limit, the longest prompt (+ max_new_tokens), and with a
chat template whether each prompt's text survives rendering. Then every prompt is generated
greedily again behind a preamble made of the other prompts' tokens, filling
`preamble_share` of the room the prompt leaves in the window (three prompts long when the window
is unknown), and compared with its plain output.

Status: fail when some prompt + max_new_tokens exceeds the window (the output would be cut or
the context truncated); warn when a sliding window or the tokenizer's limit is shorter than that,
or the template drops prompt text; else pass. A preamble is meant to change outputs, so what it
changes is reported (numbers, divergences), not judged.
"""

from __future__ import annotations

from typing import Any

from loopfix.backends.hf import generate
from loopfix.consistency.result import CheckResult, Status
from loopfix.consistency.session import Session

__all__ = ["check_context", "sliding_window", "window"]

_NO_LIMIT = 10**12  # tokenizers without a limit report ~1e30


def window(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


def sliding_window(config: Any) -> int | None:
    """The sliding attention window of some layer, or None when every layer sees everything."""
    size = getattr(config, "sliding_window", None)
    layer_types = getattr(config, "layer_types", None) or []
    if not isinstance(size, int) or getattr(config, "use_sliding_window", True) is False:
        return None
    if layer_types and "sliding_attention" not in layer_types:
        return None
    return size


def _preamble(session: Session, position: int, room: int) -> list[int]:
    others = session.prompts[position + 1 :] + session.prompts[:position]
    tokens = [t for prompt in others for t in prompt.ids]
    while tokens and len(tokens) < room:
        tokens += tokens
    return tokens[:room]


def _preamble_run(session: Session, limit: int | None) -> tuple[list[list[int]], int]:
    """Greedy outputs behind the preamble (batch 1), and the shortest preamble used."""
    config = session.config
    contexts = []
    for position, prompt in enumerate(session.prompts):
        if limit is None:  # no known window: a preamble three prompts long
            size = 3 * len(prompt.ids)
        else:
            room = limit - len(prompt.ids) - config.max_new_tokens
            size = max(0, int(room * config.preamble_share))
        contexts.append(_preamble(session, position, size) + prompt.ids)
    stops = [prompt.stop for prompt in session.prompts]
    generations = generate(
        session.model, session.tokenizer, contexts, session.settings(), 1, stops=stops
    )
    shortest = min(len(c) - len(p.ids) for c, p in zip(contexts, session.prompts, strict=True))
    return [g.tokens for g in generations], shortest


def _template_losses(session: Session) -> int | None:
    """Prompts whose text is not found in their rendered chat prompt (None: no template used)."""
    if not session.template_used:
        return None
    lost = 0
    for prompt in session.prompts:
        lost += prompt.text.strip() not in str(session.tokenizer.decode(prompt.ids))
    return lost


def check_context(session: Session) -> CheckResult:
    config, model_config = session.config, session.model.config
    limit, sliding = window(model_config), sliding_window(model_config)
    longest = max(len(p.ids) for p in session.prompts) + config.max_new_tokens
    tokenizer_limit = getattr(session.tokenizer, "model_max_length", None)
    tokenizer_limit = (
        tokenizer_limit
        if isinstance(tokenizer_limit, int) and tokenizer_limit < _NO_LIMIT
        else None
    )
    over = sum(
        limit is not None and len(p.ids) + config.max_new_tokens > limit for p in session.prompts
    )
    lost = _template_losses(session)
    reference = session.greedy_reference()
    outputs, shortest = _preamble_run(session, limit)
    preambled = session.record("greedy, batch 1, long preamble", "context", outputs)
    divergences = session.divergences(reference, preambled)
    problems = []
    if over:
        problems.append(f"{over} prompts + max_new_tokens exceed the window of {limit}")
    if sliding is not None and sliding < longest:
        problems.append(f"sliding window {sliding} < longest prompt + output {longest}")
    if tokenizer_limit is not None and limit is not None and tokenizer_limit < limit:
        problems.append(f"tokenizer limit {tokenizer_limit} < window {limit}")
    if lost:
        problems.append(f"the chat template drops text of {lost} prompts")
    status: Status = "fail" if over else "warn" if problems else "pass"
    changed = len(divergences)
    summary = "; ".join(problems) or f"longest prompt + output {longest} fits the window {limit}"
    summary += (
        f"; a preamble of >= {shortest} tokens changed {changed}/{len(session.prompts)} "
        "greedy outputs"
    )
    numbers = {
        "window": limit,
        "sliding_window": sliding,
        "tokenizer_limit": tokenizer_limit,
        "longest_prompt_plus_output": longest,
        "over_window": over,
        "chat_template": session.template_used,
        "template_dropped_text": lost,
        "preamble_tokens_min": shortest,
        "preamble_changed": changed,
        "preamble_changed_near_tie": sum(d.near_tie for d in divergences),
        "loop_rate_plain": sum(reference.looping) / len(reference.looping),
        "loop_rate_preamble": sum(preambled.looping) / len(preambled.looping),
    }
    return CheckResult("context", status, summary, numbers, divergences)
