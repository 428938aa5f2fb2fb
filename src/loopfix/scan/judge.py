"""Turn one generation into a stored `Sample`: detect loops, check the answer, keep the facts.

Steps: text (the backend's, or the tokens decoded) -> default loop verdict -> the paper metric
(scaled for short caps) -> the suite's checker -> the record, with where the loop lies in the
text so the report can highlight it without a tokenizer, and its outcome class.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from loopfix.backends.base import Generation
from loopfix.detect import DetectConfig, LoopVerdict
from loopfix.records import Sample
from loopfix.scan.detection import judge_loop, paper_loop
from loopfix.scan.outcomes import classify_outcome
from loopfix.scan.plan import Job
from loopfix.suites import check_answer
from loopfix.thinking import thinking_end

__all__ = ["overlong_sample", "judge_generation"]


def _full_text(generation: Generation, tokenizer: Any) -> str:
    if generation.text is None:
        return tokenizer.decode(generation.tokens, skip_special_tokens=True)
    if generation.reasoning:
        # A server that splits reasoning off: rejoin it as the model wrote it, so detection sees
        # the whole output and the checkers still read only what follows </think>.
        return f"{generation.reasoning}\n</think>\n\n{generation.text}"
    return generation.text


def _meta(
    job: Job, generation: Generation, verdict: LoopVerdict, text: str, tokenizer: Any
) -> dict[str, object]:
    meta: dict[str, object] = {"seed": job.seed, "prompt_length": job.prepared.prompt_length}
    thought = thinking_end(text)
    if thought is not None and tokenizer is not None:
        # The thinking's text tokenized again: a server that split reasoning off returns text,
        # not the ids it generated, and one count serves both.
        ids = tokenizer(text[:thought], add_special_tokens=False)["input_ids"]
        meta["thinking_tokens"] = len(ids)
    if verdict.span is not None and verdict.span.char_start is not None:
        meta["loop_chars"] = [verdict.span.char_start, verdict.span.char_end]
    if generation.top1 is not None:
        meta["top1"] = [round(p, 5) for p in generation.top1]
    if generation.entropy is not None:
        meta["entropy"] = [round(h, 5) for h in generation.entropy]
    if generation.error is not None:
        meta["error"] = generation.error
    if generation.guards is not None:
        meta["guards"] = generation.guards
    if generation.token_count is not None:
        meta["completion_tokens"] = generation.token_count
    if generation.stop is not None:
        meta["stop"] = generation.stop
    if generation.warning_step is not None:
        meta["warning_step"] = generation.warning_step
    return meta


def judge_generation(
    job: Job, generation: Generation, tokenizer: Any, detect_config: DetectConfig
) -> Sample:
    item = job.prepared.item
    text = _full_text(generation, tokenizer)
    verdict = judge_loop(
        generation.tokens,
        text,
        tokenizer,
        detect_config,
        generation.top1,
        generation.entropy,
        generation.finish_reason,
    )
    meta = _meta(job, generation, verdict, text, tokenizer)
    meta["paper_loop"] = paper_loop(generation.tokens, text, job.settings.max_new_tokens)
    correct = None
    if generation.finish_reason != "error":
        stopped = generation.finish_reason == "stop"
        correct = check_answer(item.checker, text, item.answer, item.meta, stopped)
    sample = Sample(
        prompt_id=item.id,
        sample_index=job.sample_index,
        settings=job.settings.model_dump(),
        tokens=generation.tokens,
        text=text,
        finish_reason=generation.finish_reason,
        loop=verdict,
        correct=correct,
        meta=meta,
    )
    return replace(sample, meta={**meta, "outcome": classify_outcome(item, sample)})


def overlong_sample(job: Job, context_length: int | None) -> Sample:
    """The record of a prompt that does not fit: flagged and not generated (never truncated)."""
    length = job.prepared.prompt_length
    return Sample(
        prompt_id=job.prepared.item.id,
        sample_index=job.sample_index,
        settings=job.settings.model_dump(),
        tokens=[],
        text="",
        finish_reason="error",
        loop=None,
        correct=None,
        meta={
            "seed": job.seed,
            "prompt_length": length,
            "overlong": True,
            "error": f"prompt of {length} tokens + max_new_tokens {job.settings.max_new_tokens} "
            f"exceeds the model's context of {context_length} tokens; not generated",
        },
    )
