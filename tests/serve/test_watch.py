"""`PartWatcher` against the detector: the same loops as `LoopMonitor` on the whole text's
tokens, whatever the deltas; the content rules of `detect_text` (near loops, wordless units,
requested lists); rewinding for a rescue; nothing kept unless asked."""

import pytest

from loopfix.detect import DetectConfig, LoopMonitor, detect_text, split_text
from loopfix.serve import PartWatcher

from .scripted_upstream import INTRO, LOOP_UNIT, NUMBERED_LIST, TABLE

LOOP = INTRO + LOOP_UNIT * 12
NEAR = INTRO + "".join(f"\nStep {i}: we check the node again and go back to it." for i in range(30))


def watch(text: str, size: int, keep_text: bool = True) -> tuple[PartWatcher, list]:
    watcher = PartWatcher(DetectConfig(), keep_text=keep_text)
    found = [watcher.feed(text[i : i + size]) for i in range(0, len(text), size)]
    found.append(watcher.finish())
    return watcher, [(i, d) for i, d in enumerate(found) if d is not None]


@pytest.mark.parametrize("size", [1, 4, 17, 1000])
def test_a_loop_is_found_where_the_monitor_finds_it_whatever_the_deltas(size: int) -> None:
    tokens = split_text(LOOP)
    verdict = LoopMonitor().push_batch(tokens.ids[None, :])[0]
    assert verdict is not None and verdict.onset is not None and verdict.period is not None
    watcher, found = watch(LOOP, size)
    assert len(found) == 1
    detection = found[0][1]
    assert (detection.kind, detection.onset, detection.period) == (
        "verbatim",
        verdict.onset,
        verdict.period,
    )
    assert detection.keep == tokens.ends[verdict.onset + verdict.period - 1]
    assert watcher.tokens == len(tokens)


def test_a_counter_loop_is_near_as_for_detect_text() -> None:
    _, found = watch(NEAR, 3)
    assert [d.kind for _, d in found] == ["near"]
    assert detect_text(NEAR).kind == "near"


@pytest.mark.parametrize("text", [TABLE, NUMBERED_LIST, "| | |\n" * 14])
def test_legitimate_repetition_is_no_loop_as_for_detect_text(text: str) -> None:
    assert watch(text, 2)[1] == []
    assert not detect_text(text).looping


def test_a_wordless_unit_needs_more_copies() -> None:
    _, found = watch("| | |\n" * 40, 2)
    assert [d.kind for _, d in found] == ["verbatim"]


def test_rewind_forgets_the_loop_and_finds_the_next_one() -> None:
    watcher, found = watch(LOOP, 5)
    keep = found[0][1].keep
    watcher.rewind(keep)
    assert watcher.text == LOOP[:keep] and watcher.detection is None
    before = watcher.tokens
    other = " Then we stop and write the path out."
    found_again = [found for found in (watcher.feed(other) for _ in range(9)) if found]
    assert len(found_again) == 1 and found_again[0].onset >= before


def test_without_keep_text_only_the_judge_keeps_the_part() -> None:
    # Issue 37: the part's final verdict is detect_text on the whole part, so the watcher keeps
    # the part's text (in a few large blocks) even without keep_text; the caller's text and token
    # ends (for release and rescue) still stay empty.
    text = " ".join(f"w{i}x" for i in range(3000))
    watcher, _ = watch(text, 7, keep_text=False)
    assert watcher.tokens == len(split_text(text)) and watcher.text == "" and watcher.ends == []
    assert watcher.whole_text() == text and len(watcher._blocks) <= len(text) // 4096 + 1
