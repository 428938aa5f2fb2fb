"""The restated-steps check (steps.py, off by default) on real reasoning traces of the corpus's
tune part: a re-verification loop that the default tiers miss is found, and traces that stop on
a written answer are not."""

from pathlib import Path

import pytest

from loopfix.detect import DetectConfig, detect_text
from loopfix.detect.corpus import CorpusItem, read_corpus
from loopfix.detect.steps import StepReader, read_steps, restated_run

CORPUS = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"
ON = DetectConfig(restated_steps=True)
# R1-Distill-Llama-8B re-adding 30 + 20 minutes to the cap (labelled semantic by the rule).
LOOP = "tli-deepseek-r1-distill-llama-8b-59-backtracking-positive"
# The same model's answer block: numbered steps that restate the reasoning, then Final Answer.
ANSWERED = "tli-deepseek-r1-distill-llama-8b-49-backtracking-none"


@pytest.fixture(scope="module")
def tune() -> dict[str, CorpusItem]:
    return {item.id: item for item in read_corpus(CORPUS, "tune")}


def test_off_by_default(tune):
    assert DetectConfig().restated_steps is False
    item = tune[LOOP]
    assert not detect_text(item.text, cut=item.cut).looping


def test_a_restating_tail_is_a_semantic_loop(tune):
    item = tune[LOOP]
    verdict = detect_text(item.text, config=ON, cut=item.cut)
    assert (verdict.kind, verdict.decided_by) == ("semantic", "restated-steps")
    assert verdict.repeats is not None and verdict.repeats >= ON.restated_steps_min
    assert verdict.evidence and verdict.evidence in item.text
    assert verdict.span is not None and verdict.span.char_end == len(item.text.rstrip())


def test_a_trace_that_writes_its_answer_is_clean(tune):
    item = tune[ANSWERED]
    assert item.label == "clean"
    assert not detect_text(item.text, config=ON, cut=item.cut).looping
    # The loop followed by a closed thinking and an answer is clean too.
    looping = tune[LOOP].text + "\n</think>\n\nIt takes 50 minutes."
    assert not detect_text(looping, config=ON).looping


def test_semantic_off_and_a_cut_free_stream_switch_it_off(tune):
    item = tune[LOOP]
    off = DetectConfig(restated_steps=True, semantic="off")
    assert not detect_text(item.text, config=off, cut=item.cut).looping
    assert not detect_text(item.text, config=ON, cut=False).looping


def test_short_steps_are_not_judged():
    steps = read_steps("So 5 + 3 = 8.\nYes.\nSo five plus three makes eight, checked again.", 3)
    assert [step.new for step in steps] == [True]


def test_read_as_it_grows_the_steps_are_those_of_the_whole_text(tune):
    # The think-escape's trigger reads a thought at every line end: each read must leave the
    # reader exactly where reading the text so far at once would.
    text = tune[LOOP].text
    reader = StepReader(ON.restated_steps_min_words)
    read = 0
    for end in [i + 1 for i, char in enumerate(text) if char == "\n"] + [len(text)]:
        assert reader.read(text[read:end]) == read_steps(text[:end], ON.restated_steps_min_words)
        read = end
    assert len(restated_run(reader.steps)) >= ON.restated_steps_min
