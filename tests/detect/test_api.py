import numpy as np

from loopfix.detect import DetectConfig, detect_text, detect_tokens, split_text

from .test_text import CharTokenizer

PREFIX = "We need the area of a triangle with sides 13, 14 and 15. Heron's formula gives 84:"
UNIT = "Wait, let me verify that 84 squared is 7056. 84 * 84 = 7056. Yes, so the area is 84.\n\n"


def test_verbatim_text_loop_cut_mid_word():
    # PREFIX ends unlike UNIT, so the periodic run starts exactly at the first copy.
    text = (PREFIX + UNIT * 12)[:-7]
    verdict = detect_text(text)
    assert verdict.looping and verdict.kind == "verbatim" and verdict.repeats == 11
    assert text[: verdict.span.char_start] + verdict.evidence == PREFIX + UNIT
    assert verdict.evidence == UNIT
    assert text.endswith("the area i")
    assert verdict.span.char_end == len(text) - 2  # the cut-off word "i(s)" is left out
    tokens = split_text(text)
    assert verdict.onset == tokens.token_at(len(PREFIX))


def test_clean_text_is_not_flagged():
    assert not detect_text(PREFIX + UNIT + "So the final answer is 84.").looping
    assert not detect_text("").looping


def test_wordless_units_need_many_copies():
    matrix = "array([" + ",\n       ".join(["[0, 0, 0, 0, 0, 0, 0, 0]"] * 8) + "])"
    assert not detect_text(matrix).looping
    assert detect_text("weights = [0.5, " + "0, " * 300).looping


def test_ngram_metric_finds_a_loop_that_escaped():
    unit = " ".join(f"word{i}" for i in range(40)) + ". "
    text = (
        "Intro sentence here. "
        + unit * 22
        + "Finally, something else entirely to finish the answer."
    )
    verdict = detect_text(text)
    assert verdict.looping and verdict.kind == "verbatim" and verdict.repeats >= 20
    assert verdict.span.char_end < len(text)


def test_tiers_can_be_switched_off():
    rows = "".join(
        f"Step {i}: let me reconsider the problem from the very beginning.\n" for i in range(80)
    )
    assert detect_text(rows).kind == "near"
    assert not detect_text(
        rows, config=DetectConfig(near=False, ngram=False, semantic="off", segment=False)
    ).looping


def test_detect_tokens_on_model_ids():
    rng = np.random.default_rng(0)
    tokens = list(rng.integers(0, 50_000, 300)) + [11, 12, 13, 14, 15, 16, 17] * 15
    verdict = detect_tokens(tokens)
    assert (verdict.kind, verdict.onset, verdict.period, verdict.repeats) == (
        "verbatim",
        300,
        7,
        15,
    )
    assert verdict.evidence is None and verdict.span.char_start is None
    assert not detect_tokens(list(rng.integers(0, 50_000, 2_000))).looping


def test_positions_follow_the_given_tokenizer():
    text = PREFIX + UNIT * 8
    verdict = detect_text(text, tokenizer=CharTokenizer())
    assert verdict.kind == "verbatim"
    assert (verdict.onset, verdict.period) == (len(PREFIX), len(UNIT))
    assert verdict.evidence == UNIT


def test_segment_verdict_is_mapped_to_tokenizer_positions():
    block = " ".join(
        f"Sentence {w} of the long block adds another new point."
        for w in "abcdefghijklmnopqrstuvwxyz"
    )
    text = "Intro.\n" + (block + "\n") * 4
    config = DetectConfig(ngram=False, max_period=64)  # leave it to the segment tier
    builtin = detect_text(text, config=config)
    assert builtin.kind == "segment"
    chars = detect_text(text, tokenizer=CharTokenizer(), config=config)
    assert chars.kind == "segment"
    assert chars.onset == builtin.span.char_start == len("Intro.\n")
    assert chars.period == len(block) + 1
