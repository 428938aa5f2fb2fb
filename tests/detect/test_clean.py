import json

from loopfix.detect import LoopVerdict, Span, detect_text
from loopfix.detect.clean import CleanReport, clean_lines, cut_text

PREFIX = "Compute 12 * 13. It is 156.\n\n"
UNIT = "Wait, let me double-check 12 * 13: 12 * 13 = 156, so the answer is 156.\n\n"
LOOPING = PREFIX + UNIT * 10 + "Wait, let me dou"


def test_cut_keeps_the_text_before_the_onset_and_one_copy():
    verdict = detect_text(LOOPING)
    assert cut_text(LOOPING, verdict) == PREFIX + UNIT
    assert cut_text("clean", LoopVerdict.not_looping()) == "clean"
    # The run starts inside PREFIX ("is 156.\n\n" ends both), yet the cut ends a sentence.
    assert verdict.span.char_start < len(PREFIX)
    made_up = LoopVerdict(True, "verbatim", 0, 1, 3, Span(0, 3, 2, 5), "ab")
    assert cut_text("xxababab", made_up) == "xxab"


def test_clean_lines_drop_and_cut():
    raw_clean = '{"id": 1,  "text": "fine"}'
    lines = [
        raw_clean,
        json.dumps({"id": 2, "text": LOOPING}),
        "{not json",
        json.dumps({"id": 3, "choices": [{"message": {"content": LOOPING}}]}),
    ]
    report = CleanReport()
    dropped = list(clean_lines(iter(lines), detect_text, "drop", report=report))
    assert dropped == [raw_clean]  # kept byte for byte
    assert (report.kept, report.dropped, report.cut) == (1, 2, 0)
    assert report.kinds == {"verbatim": 2} and report.errors[0].line == 3
    report = CleanReport()
    cut = [json.loads(line) for line in clean_lines(iter(lines), detect_text, "cut", report=report)]
    assert cut[1] == {"id": 2, "text": PREFIX + UNIT}
    assert cut[2]["choices"][0]["message"]["content"] == PREFIX + UNIT
    assert (report.kept, report.dropped, report.cut) == (1, 0, 2)
