"""The one loop definition and the outcome classes, on real detector verdicts and real graphs."""

from loopfix.detect import detect_text
from loopfix.lab.stargraph import render
from loopfix.records import Sample
from loopfix.scan.detection import scan_detect_config
from loopfix.scan.outcomes import classify_outcome
from loopfix.scan.summary import is_loop
from loopfix.suites import arith_suite, check_answer, stargraph_suite

LOOPING = "we add the numbers. " * 12
PLAIN = "Mia has 12 apples, then 20, so the answer is \\boxed{20}."


def sample(text: str, finish_reason: str, correct: bool | None = None) -> Sample:
    verdict = detect_text(text, None, scan_detect_config(64))
    return Sample("p", 0, {"temperature": 0.0}, [], text, finish_reason, verdict, correct)  # type: ignore[arg-type]


def test_a_loop_is_a_repetition_the_output_never_left() -> None:
    assert sample(LOOPING, "length").looping
    assert is_loop(sample(LOOPING, "length"))
    # The same repetition followed by a stop cost tokens, not the answer: not a loop.
    assert sample(LOOPING, "stop").looping
    assert not is_loop(sample(LOOPING, "stop"))
    assert not is_loop(sample(PLAIN, "length"))  # cut without repeating
    assert is_loop(sample(PLAIN, "repetition"))  # a server or the cut guard stopped a loop


def test_generic_outcomes() -> None:
    item = arith_suite(1, 0)[0]
    assert classify_outcome(item, sample(LOOPING, "length", False)) == "loop"
    assert classify_outcome(item, sample(PLAIN, "length", False)) == "cap_without_loop"
    assert classify_outcome(item, sample(PLAIN, "stop", True)) == "correct"
    assert classify_outcome(item, sample(PLAIN, "stop", False)) == "wrong_stop"
    assert classify_outcome(item, sample(PLAIN, "stop", None)) == "unjudged"
    assert classify_outcome(item, sample("", "error")) == "error"


def test_star_graph_outcomes_say_where_a_walk_went() -> None:
    item = stargraph_suite(1, 7)[0]
    graph = item.meta["graph"]
    root, arms, target_arm = graph["root"], graph["arms"], graph["target_arm"]
    wrong = arms[(target_arm + 1) % len(arms)]
    walks = {
        "success": [root, *arms[target_arm]],
        "wrong_stop": [root, *wrong],
        "illegal": [root, wrong[-1]],
    }
    for expected, walk in walks.items():
        text = render(walk)
        correct = check_answer("stargraph", text, item.answer, item.meta, stopped=True)
        assert classify_outcome(item, sample(text, "stop", correct)) == expected
    excursion = render([*wrong]) + " back " + render([root])
    looping = render([root]) + (" " + excursion) * 6
    assert classify_outcome(item, sample(looping, "length", False)) == "loop"
