"""Cut-aware detection, the flood tier and the scores and evidence names of verdicts."""

import calendar

from loopfix.detect import detect_text

# A templated line whose numbers do not count like counters ("Step 12: 4800 apples is 9600").
DOUBLING = "Let me solve it step by step.\n" + "".join(
    f"Step {i}: {300 * 2**i} apples is {600 * 2**i} apples.\n" for i in range(8, 14)
)


def test_templated_tail_is_a_loop_only_when_known_cut():
    assert not detect_text(DOUBLING).looping
    assert not detect_text(DOUBLING, cut=False).looping
    verdict = detect_text(DOUBLING, cut=True)
    assert verdict.looping and verdict.kind == "near"
    assert verdict.decided_by == "near+cut" and 0.5 <= verdict.score < 1
    assert verdict.evidence is not None and "Step 8: 76800 apples" in verdict.evidence


def test_word_flood_anywhere_and_wordless_rows_stay_clean():
    text = "Key decisions:\n- Callback " + "prevent " * 44 + "-- sorry, let me state it clearly."
    verdict = detect_text(text)
    assert verdict.looping and verdict.decided_by == "flood"
    assert verdict.evidence.strip() == "prevent" and verdict.repeats >= 40
    matrix = "\n".join("[" + ", ".join(["0"] * 12) + "]" for _ in range(12))
    assert not detect_text("The zero matrix:\n" + matrix).looping


def test_character_flood_and_special_token_flood():
    digits = ",\n".join(f'"{d * 24}"' for d in "0123456789")
    assert detect_text(digits).decided_by == "flood"
    special = "The answer is 4." + "<｜begin▁of▁sentence｜>" * 50
    assert detect_text(special).looping


def test_calendar_with_repeated_headers_is_clean():
    assert not detect_text(calendar.TextCalendar().formatyear(2024)).looping


def test_score_grows_with_the_copies():
    unit = "The answer is 5, and that is final.\n"
    few, many = detect_text(unit * 7), detect_text(unit * 40)
    assert few.decided_by == many.decided_by == "periodic-tail"
    assert 0.5 <= few.score < many.score <= 1
