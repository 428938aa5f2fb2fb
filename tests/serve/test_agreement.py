"""The proxy's watcher and `detect_text` agree (issue 37): a part streamed through `PartWatcher` as
the proxy feeds it (deltas of a few characters, then its finish_reason) ends with exactly the
verdict `detect_text` gives the finished text (looping or not, with the same `cut`), and a
mid-stream detection only ever happens where `detect_text` on the text so far (judged with
`cut=False`, as if the stream had ended there by itself) says loop.

Texts: every real-model generation of the repository that carries its finish reason: the
SmolLM2-135M and stargraph scan records of data/detect_corpus_real/corpus.jsonl (152) and
tests/data/smollm2_arith_judged.jsonl (40), loops and clean ones; plus constructed cases where the
two used to disagree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopfix.detect import DetectConfig, detect_text, split_text
from loopfix.serve import PartWatcher
from loopfix.serve.watch import CHECK_EVERY, WINDOW_TOKENS

from .scripted_upstream import INTRO, LOOP_UNIT

ROOT = Path(__file__).resolve().parents[2]
DELTAS = (3, 1, 5, 2, 7, 4)  # delta sizes, in turn: a few characters, as upstreams send them


def _real_records() -> list[tuple[str, str, bool]]:
    """(id, text, cut) of every real-model record with a known finish reason."""
    records = []
    for line in (ROOT / "data/detect_corpus_real/corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["source"].startswith("loopfix") and row["cut"] is not None:
            records.append((row["id"], row["text"], bool(row["cut"])))
    for line in (ROOT / "tests/data/smollm2_arith_judged.jsonl").read_text().splitlines():
        row = json.loads(line)
        records.append(
            (f"judged-{row['prompt_id']}", row["text"], row["finish_reason"] == "length")
        )
    return records


REAL = _real_records()

COUNT_DOWN = ", ".join(str(n) for n in range(10, 0, -1)) + "."
LONG_COUNT_DOWN = ", ".join(str(n) for n in range(100, 0, -1)) + "."
CONSTRUCTED = {
    # a flood shorter than min_span: only detect's flood tier sees it
    "flood": ("ok " + "prevent " * 60 + "and then the answer follows in plain words.", False),
    # a loop that stops: the watcher acts after three copies; the finished text is judged whole
    "loop-then-paragraph": (
        INTRO + LOOP_UNIT * 12 + "\n\nNow a new paragraph starts with other words entirely.",
        False,
    ),
    # a short repeated tail at the cap: only the relaxed at-the-cut rules flag it
    "cut-tail": ("Intro text here. " + "a b c d e " * 6, True),
    "cut-tail-not-cut": ("Intro text here. " + "a b c d e " * 6, False),
    # a loop with two stray tokens after it (detect's tail_slack)
    "trailing": (INTRO + LOOP_UNIT * 6 + "so we", False),
    "count-down": (COUNT_DOWN, False),
    "count-down-cut": (COUNT_DOWN, True),
    "long-count-down": (LONG_COUNT_DOWN, False),
    # a hundred numbers running to the cap: detect_text's relaxed cut rules call that a loop
    "long-count-down-cut": (LONG_COUNT_DOWN, True),
}


def stream(text: str, cut: bool) -> tuple[PartWatcher, list[tuple[int, object]]]:
    """Feed `text` as the proxy does; the mid-stream detections with the characters fed."""
    watcher = PartWatcher(DetectConfig(), keep_text=False)
    found, position, turn = [], 0, 0
    while position < len(text):
        size = DELTAS[turn % len(DELTAS)]
        turn += 1
        detection = watcher.feed(text[position : position + size])
        position = min(len(text), position + size)
        if detection is not None:
            found.append((watcher.tokens, detection))
    watcher.finish(cut)
    return watcher, found


def check_agreement(text: str, cut: bool) -> PartWatcher:
    watcher, found = stream(text, cut)
    expected = detect_text(text, cut=cut)
    assert watcher.verdict is not None
    assert watcher.verdict.looping == expected.looping
    assert watcher.verdict == expected  # the very same verdict: one judge
    assert watcher.whole_text() == text
    for tokens, detection in found:
        # where the watcher acted, detect_text on the text so far (its first `tokens` tokens,
        # as if the stream had ended there) says loop
        pieces = split_text(text)
        so_far = text[: int(pieces.ends[tokens - 1])]
        assert detect_text(so_far, cut=False).looping, detection
    return watcher


@pytest.mark.parametrize("record", REAL, ids=[r[0] for r in REAL])
def test_real_records_agree(record: tuple[str, str, bool]) -> None:
    _, text, cut = record
    check_agreement(text, cut)


def test_the_real_records_hold_loops_and_clean_texts() -> None:
    verdicts = [detect_text(text, cut=cut).looping for _, text, cut in REAL]
    assert len(REAL) >= 150 and sum(verdicts) >= 30 and len(verdicts) - sum(verdicts) >= 30


@pytest.mark.parametrize("name", list(CONSTRUCTED))
def test_constructed_cases_agree(name: str) -> None:
    text, cut = CONSTRUCTED[name]
    check_agreement(text, cut)


def test_the_constructed_cases_are_what_they_claim() -> None:
    def looping(name: str) -> bool:
        text, cut = CONSTRUCTED[name]
        watcher, _ = stream(text, cut)
        assert watcher.verdict is not None
        return watcher.verdict.looping

    assert looping("flood") and looping("cut-tail") and looping("trailing")
    assert not looping("cut-tail-not-cut")
    assert (
        looping("loop-then-paragraph") == detect_text(CONSTRUCTED["loop-then-paragraph"][0]).looping
    )


def test_the_flood_is_found_mid_stream() -> None:
    text, cut = CONSTRUCTED["flood"]
    _, found = stream(text, cut)
    assert [d.kind for _, d in found] == ["verbatim"]


def test_a_loop_that_stops_later_is_still_stopped_as_soon_as_detect_text_agrees() -> None:
    text, cut = CONSTRUCTED["loop-then-paragraph"]
    _, found = stream(text, cut)
    loop_end = len(split_text(INTRO + LOOP_UNIT * 12))
    assert len(found) == 1 and found[0][0] < loop_end
    tokens, detection = found[0]
    so_far = text[: int(split_text(text).ends[tokens - 1])]
    assert (
        detect_text(so_far, cut=False).looping
        and not detect_text(text[: int(split_text(text).ends[tokens - 2])], cut=False).looping
    )  # at the first token where detect_text says loop


@pytest.mark.parametrize("name", ["count-down", "count-down-cut", "long-count-down"])
def test_a_count_down_is_never_stopped(name: str) -> None:
    text, cut = CONSTRUCTED[name]
    watcher, found = stream(text, cut)
    assert found == [] and watcher.verdict is not None and not watcher.verdict.looping


def test_a_count_down_to_the_cap_is_judged_only_at_the_cap() -> None:
    # mid-stream the proxy cannot know the output will be cut, so it does not stop it; at the
    # cap the verdict is detect_text's with cut=True
    watcher, found = stream(LONG_COUNT_DOWN, True)
    assert found == [] and watcher.verdict == detect_text(LONG_COUNT_DOWN, cut=True)


def test_some_real_records_are_caught_mid_stream() -> None:
    caught = sum(bool(stream(text, cut)[1]) for _, text, cut in REAL)
    assert caught >= 10


def test_the_window_is_bounded() -> None:
    assert WINDOW_TOKENS >= 3 * DetectConfig().max_period and CHECK_EVERY <= WINDOW_TOKENS


def test_the_proxy_records_each_finished_part_s_verdict() -> None:
    import httpx

    from loopfix.serve import ServeConfig

    from .proxy import finish_reasons, metric, running_proxy, stream_events
    from .scripted_upstream import ScriptedUpstream

    labels = {"part": "content", "looping": "true", "cut": "true"}
    body = {"model": "loop", "messages": [{"role": "user", "content": "Go."}], "max_tokens": 4000}
    with ScriptedUpstream() as upstream:
        with running_proxy(ServeConfig(upstream=upstream.url, action="observe")) as url:
            before = metric(
                httpx.get(url + "/metrics").text, "loopfix_part_verdicts_total", **labels
            )
            events = stream_events(url + "/v1/chat/completions", body)
            assert finish_reasons(events) == ["length"]
            after = metric(
                httpx.get(url + "/metrics").text, "loopfix_part_verdicts_total", **labels
            )
    assert after == before + 1
