"""Loops inside vs after the thinking, and its length, in a scan's summary (issue 51, point 4):
on real detector verdicts of teacher-written thinking."""

from __future__ import annotations

import random

from loopfix.detect import DetectConfig
from loopfix.lab.think_teacher import make_problem, trace
from loopfix.records import DecodeSettings, Sample
from loopfix.scan.detection import judge_loop
from loopfix.scan.summary import summarize
from loopfix.summaries import SettingSummary

SETTINGS = DecodeSettings(max_new_tokens=384).model_dump()


def _sample(prompt_id: str, text: str, finish: str, thinking_tokens: int | None) -> Sample:
    verdict = judge_loop([], text, None, DetectConfig(), finish_reason=finish)
    meta = {} if thinking_tokens is None else {"thinking_tokens": thinking_tokens}
    return Sample(prompt_id, 0, SETTINGS, [], text, finish, loop=verdict, meta=meta)  # type: ignore[arg-type]


def test_a_loop_is_inside_the_thinking_when_it_never_closed_and_after_it_when_it_did() -> None:
    problem = make_problem(100, 0)
    closed = trace(problem, random.Random(0))
    thought, answer = closed.split("</think>")
    stuck = thought + "\n".join([problem.steps[1]] * 30)
    run_on = closed + "\n" + "\n".join([f"Answer: {problem.answer}"] * 40)
    samples = [
        _sample("clean", closed, "stop", 40),
        _sample("inside", stuck, "length", 384),
        _sample("after", run_on, "length", 50),
        _sample("plain", "The answer is 3.", "stop", None),  # no thinking: not counted
    ]
    assert [s.prompt_id for s in samples if s.looping] == ["inside", "after"]
    (row,) = summarize(samples).settings
    thinking = row.thinking
    assert thinking is not None
    assert (thinking.outputs, thinking.closed) == (3, 2)
    assert (thinking.loops_in_thinking, thinking.loops_after_thinking) == (1, 1)
    assert thinking.mean_thinking_tokens == (40 + 384 + 50) / 3
    assert thinking.median_thinking_tokens == 50
    assert "1 inside the thinking, 1 after it" in thinking.line()
    assert SettingSummary.from_json(row.to_json()) == row  # summary.json keeps it


def test_a_model_that_never_thinks_has_no_thinking_summary() -> None:
    (row,) = summarize([_sample("plain", "The answer is 3.", "stop", None)]).settings
    assert row.thinking is None
    assert SettingSummary.from_json(row.to_json()).thinking is None
