import numpy as np

from loopfix.detect import DetectConfig, detect_text, split_text
from loopfix.detect.near import counter_like, find_near_loop

CONFIG = DetectConfig()


def near(text: str, config: DetectConfig = CONFIG):
    tokens = split_text(text)
    classes = np.where(tokens.volatile, 0, -1)
    return find_near_loop(tokens.ids, classes, tokens.words, config, tokens.number_in)


def test_counter_in_a_repeated_sentence():
    text = "Setup.\n" + "".join(
        f"Step {i}: let me reconsider the problem from the beginning.\n" for i in range(12, 40)
    )
    verdict = near(text)
    assert verdict is not None and verdict.kind == "near"
    assert text[split_text(text).starts[verdict.onset] :].startswith(".\nStep 12")
    assert verdict.repeats == 28


def test_terse_counter_needs_many_copies():
    short = "".join(f"{224 + 4 * i} unknown\n" for i in range(100))
    long = "".join(f"{224 + 4 * i} unknown\n" for i in range(400))
    assert near(short) is None
    assert near(long) is not None


def test_numbers_that_do_not_count_are_not_a_loop():
    totals = [sum(7 + 4 * j for j in range(i)) for i in range(31)]
    arithmetic = "".join(
        f"Term {i + 1} is {7 + 4 * i}; adding it to the running total {totals[i]} "
        f"gives {totals[i + 1]}.\n"
        for i in range(30)
    )
    assert near(arithmetic) is None


def test_an_exact_loop_is_left_to_the_verbatim_tier():
    assert near("intro " + "the same words again and again here. " * 20) is None


def test_counter_like():
    assert counter_like([1, 2, 3, 4, 5])
    assert counter_like([30, 31, 1, 2, 3, 4, 5, 6, 7])  # a month boundary in a day slot
    assert not counter_like([3, 7, 4, 12, 5])
    assert not counter_like([1, None, 3])
    assert not counter_like([1, 2])


def test_token_ids_with_digit_classes():
    # Model tokens: digits are single tokens, so the counter changes the unit's length.
    unit = [50, 51, 52, 53, 54, 55, 56, 57]
    tokens = [90, 91]
    for i in range(5, 60):
        tokens += [40] + [1000 + int(d) for d in str(i)] + unit
    classes = {1000 + d: 0 for d in range(10)}
    from loopfix.detect import detect_tokens

    verdict = detect_tokens(tokens, token_classes=classes)
    assert verdict.kind == "near" and verdict.onset == 2
    assert detect_tokens(tokens).looping is False


def test_detect_text_near_with_dates():
    import datetime

    days = [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(60)]
    rows = "".join(f"| {day} | 09:30 | stand-up with the platform team |\n" for day in days)
    verdict = detect_text("Schedule:\n\n" + rows)
    # The run reaches back to the newline before the first row, which the unit also ends with.
    assert verdict.kind == "near" and verdict.repeats == 60
    assert verdict.evidence == "\n| 2024-01-01 | 09:30 | stand-up with the platform team |"


def test_numbers_cycling_slower_than_the_template_count_at_a_multiple_of_its_period():
    # Qwen2.5-Math-1.5B listing clock angles to the cap (data/detect_corpus_real): the template
    # repeats every sentence, but the hour advances once every three sentences (H:00, H:30, H:45).
    from pathlib import Path

    from loopfix.detect.corpus import read_corpus

    corpus = Path(__file__).resolve().parents[2] / "data" / "detect_corpus_real" / "corpus.jsonl"
    (item,) = [i for i in read_corpus(corpus) if i.id == "tli-qwen2.5-math-1.5b-17"]
    verdict = near(item.text)
    assert verdict is not None and verdict.kind == "near"
    tokens = split_text(item.text)
    unit = item.text[tokens.starts[verdict.onset] : tokens.starts[verdict.onset + verdict.period]]
    assert unit.count("the angle between the hour and minute hands") == 3
    # Without the slower cycle (every hour on its own sentence, angles not counting) it is a
    # table of computed values, not a loop.
    hours = "".join(
        f"At {h}:00, the angle between the hour and minute hands is {(30 * h * h) % 360} degrees. "
        for h in range(1, 13)
    )
    assert near(hours) is None
