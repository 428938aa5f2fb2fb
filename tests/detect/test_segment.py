from loopfix.detect import DetectConfig, split_text
from loopfix.detect.segment import NEUTRAL, NEW, exact_matches, find_segment_loop, split_segments

CHORUS = "So let the river carry me home,\nDown through the valley where the wild winds roam.\n"


def test_split_lines_and_sentences():
    tokens = split_text("First line. Second sentence!\nv = 3.5 here\n\n---\n")
    keys = [s.key for s in split_segments(tokens)]
    assert keys == ["first line .", "second sentence !", "v = 3 . 5 here", "---"]
    assert [s.words for s in split_segments(tokens)][-1] == 0
    assert [s.key for s in split_segments(tokens, sentences=False)][
        0
    ] == "first line . second sentence !"


def test_exact_matches_ignore_case_and_spacing_within_the_window():
    tokens = split_text("A b c.\nx y.\na  B c.\n---\nx y.\n")
    assert exact_matches(split_segments(tokens), window=5) == [NEW, NEW, 0, NEUTRAL, 1]
    assert exact_matches(split_segments(tokens), window=1) == [NEW, NEW, NEW, NEUTRAL, NEW]


def test_a_block_longer_than_max_period_cycles():
    block = " ".join(
        f"Sentence {w} of the long block says something new about it."
        for w in "abcdefghijklmnopqrst"
    )
    text = "Intro.\n" + (block + "\n\n") * 4 + block[:50]
    config = DetectConfig(max_period=64)
    verdict = find_segment_loop(split_text(text), config)
    assert verdict is not None and verdict.kind == "segment" and verdict.repeats == 4
    assert verdict.period > config.max_period
    assert verdict.evidence.startswith("Sentence a of the long block")
    assert text[verdict.span.char_start :].startswith(block)


def test_reordered_cycle():
    lines = [
        "Maybe use the pigeonhole principle on residues.",
        "Two equal residues differ by a multiple of 5.",
        "But we need three numbers, not two.",
        "Perhaps look at sums of residues instead.",
    ]
    order = [0, 1, 2, 3, 2, 0, 3, 1, 1, 3, 0, 2, 3, 2, 1, 0, 0, 2, 1, 3]
    text = "Problem statement here.\n" + "\n".join(lines[i] for i in order) + "\n"
    verdict = find_segment_loop(split_text(text), DetectConfig())
    assert verdict is not None and verdict.repeats == 5


def test_chorus_between_different_verses_is_not_a_loop():
    verses = [f"Verse {n} line one is new,\nverse {n} line two is new as well.\n" for n in "abcd"]
    song = "".join(verse + CHORUS for verse in verses) + CHORUS
    assert find_segment_loop(split_text(song), DetectConfig()) is None


def test_questionnaire_is_not_a_loop():
    options = "a) Very satisfied\nb) Satisfied\nc) Neutral\nd) Dissatisfied\ne) Very dissatisfied\n"
    topics = ["delivery speed", "product quality", "packaging", "price", "checkout", "support"]
    survey = "".join(f"How satisfied were you with the {t}?\n{options}\n" for t in topics)
    assert find_segment_loop(split_text(survey), DetectConfig()) is None
