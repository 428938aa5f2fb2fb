"""The four actions through a real proxy in front of the scripted upstream, streamed and not,
chat and completions, n > 1; the per-request override; legitimate repetition untouched."""

from collections.abc import Iterator

import httpx
import pytest

from loopfix.detect import DetectConfig
from loopfix.serve import PartWatcher, ServeConfig

from .proxy import finish_reasons, metric, running_proxy, stream_events, texts
from .scripted_upstream import (
    ANSWER,
    CONTINUATION,
    INTRO,
    LOOP_UNIT,
    NUMBERED_LIST,
    TABLE,
    ScriptedUpstream,
    words,
)

CHAT = "/v1/chat/completions"
MESSAGES = [{"role": "user", "content": "Find the path."}]


@pytest.fixture(scope="module")
def proxy(upstream: ScriptedUpstream) -> Iterator[str]:
    with running_proxy(ServeConfig(upstream=upstream.url, action="observe")) as url:
        yield url


def chat(model: str, action: str | None = None, **extra: object) -> dict:
    body: dict = {"model": model, "messages": MESSAGES, "max_tokens": 4000, **extra}
    if action is not None:
        body["loopfix"] = {"action": action}
    return body


def metrics(proxy: str) -> str:
    return httpx.get(proxy + "/metrics").text


def test_observe_passes_a_loop_through_untouched_and_counts_it(proxy: str) -> None:
    before = metric(
        metrics(proxy),
        "loopfix_loops_detected_total",
        kind="verbatim",
        part="content",
        action="observe",
    )
    events = stream_events(proxy + CHAT, chat("loop"))
    assert texts(events) == INTRO + LOOP_UNIT * 150
    assert finish_reasons(events) == ["length"]
    after = metrics(proxy)
    assert (
        metric(
            after, "loopfix_loops_detected_total", kind="verbatim", part="content", action="observe"
        )
        == before + 1
    )
    assert metric(after, "loopfix_cut_total") >= 1


def test_stop_ends_the_stream_before_the_repeat_and_closes_the_upstream(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    events = stream_events(proxy + CHAT, chat("loop", "stop"))
    record = upstream.last()
    assert "loopfix" not in record.body  # the override is stripped before forwarding
    assert finish_reasons(events) == ["repetition"]
    text = texts(events)
    # The loop is withheld: the client gets the text before its first repeat.
    assert (INTRO + LOOP_UNIT).startswith(text) and len(text) > len(INTRO)
    assert record.finished.wait(10) and record.disconnected  # the upstream saw the hang-up
    assert record.chunks < 200 < 150 * 11  # it stopped generating long before the script ended
    assert len({event["id"] for event in events}) == 1


def test_stop_without_streaming_answers_one_message(proxy: str) -> None:
    reply = httpx.post(proxy + CHAT, json=chat("loop", "stop"), timeout=30).json()
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "repetition"
    assert (INTRO + LOOP_UNIT).startswith(choice["message"]["content"])
    assert reply["object"] == "chat.completion"


@pytest.mark.parametrize(("model", "expected"), [("table", TABLE), ("list", NUMBERED_LIST)])
def test_legitimate_repetition_passes_through_stop_untouched(
    proxy: str, model: str, expected: str
) -> None:
    events = stream_events(proxy + CHAT, chat(model, "stop"))
    assert texts(events) == expected
    assert finish_reasons(events) == ["stop"]
    reply = httpx.post(
        proxy + "/v1/completions",
        json={"model": model, "prompt": "x", "loopfix": {"action": "stop"}},
    ).json()
    assert reply["choices"][0]["text"] == expected


def test_rescue_continues_a_chat_from_the_text_before_the_repeat(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    events = stream_events(proxy + CHAT, chat("loop", "rescue"))
    continuation = upstream.last()
    assert continuation.body["continue_final_message"] is True
    assert continuation.body["add_generation_prompt"] is False
    kept = continuation.body["messages"][-1]
    # The kept text holds the loop's unit once and ends a sentence.
    assert kept == {"role": "assistant", "content": INTRO + LOOP_UNIT}
    # The banned token is the repeat's first word, as the upstream tokenizes it.
    banned = upstream.token_ids(LOOP_UNIT)[0]
    assert continuation.body["logit_bias"] == {str(banned): -100.0}
    assert continuation.body["max_tokens"] == 4000 - len(upstream.token_ids(kept["content"]))
    # The client sees one answer: the kept text, then the continuation, under one id.
    assert texts(events) == kept["content"] + CONTINUATION
    assert finish_reasons(events) == ["stop"]
    assert len({event["id"] for event in events}) == 1
    assert metric(metrics(proxy), "loopfix_rescues_total", outcome="finished") >= 1


def test_rescue_of_a_completion_continues_from_prompt_and_text(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    body = {"model": "loop", "prompt": "Q: path? A:", "loopfix": {"action": "rescue"}}
    reply = httpx.post(proxy + "/v1/completions", json=body, timeout=30).json()
    continuation = upstream.last().body
    kept = continuation["prompt"].removeprefix("Q: path? A:")
    assert continuation["prompt"].startswith("Q: path? A:") and kept.startswith(INTRO)
    assert reply["choices"][0]["text"] == kept + CONTINUATION
    assert reply["choices"][0]["finish_reason"] == "stop"


def test_think_escape_ends_a_looping_reasoning_and_lets_the_answer_start(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    events = stream_events(proxy + CHAT, chat("think-loop", "think-escape"))
    continuation = upstream.last().body
    prefix = continuation["messages"][-1]["content"]
    reasoning = texts(events, "reasoning_content")
    assert prefix == "<think>\n" + reasoning + "\n</think>\n\n"
    assert (INTRO + LOOP_UNIT).startswith(reasoning)
    assert "logit_bias" not in continuation  # the marker changes the context; nothing banned
    assert texts(events) == CONTINUATION  # the answer
    assert finish_reasons(events) == ["stop"]


def test_think_escape_of_a_think_block_in_the_content_writes_the_marker_into_it(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    # vLLM's reasoning parsers need one-token markers: other models' thinking arrives as content.
    for stream in (True, False):
        body = chat("think-inline", "think-escape", stream=stream)
        if stream:
            content = texts(stream_events(proxy + CHAT, body))
        else:
            reply = httpx.post(proxy + CHAT, json=body, timeout=30).json()
            content = reply["choices"][0]["message"]["content"]
        prefix = upstream.last().body["messages"][-1]["content"]
        kept = prefix.removeprefix("<think>\n").removesuffix("\n</think>\n\n")
        assert prefix.endswith("\n</think>\n\n") and kept == INTRO + LOOP_UNIT
        assert content == prefix + CONTINUATION


def test_n_choices_are_watched_one_by_one(proxy: str) -> None:
    events = stream_events(proxy + CHAT, chat("loop-mixed", "stop", n=2))
    assert finish_reasons(events, 0) == ["repetition"]
    assert finish_reasons(events, 1) == ["stop"]
    assert texts(events, index=1) == ANSWER


def test_an_upstream_repetition_finish_counts_as_a_loop(proxy: str) -> None:
    labels = {"kind": "upstream", "part": "content", "action": "observe"}
    before = metric(metrics(proxy), "loopfix_loops_detected_total", **labels)
    events = stream_events(proxy + CHAT, chat("repetition"))
    assert finish_reasons(events) == ["repetition"]
    assert metric(metrics(proxy), "loopfix_loops_detected_total", **labels) == before + 1


def test_a_bad_loopfix_field_is_a_400_naming_it(proxy: str) -> None:
    reply = httpx.post(proxy + CHAT, json={**chat("loop"), "loopfix": {"action": "explode"}})
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith("loopfix.action")


def test_reasoning_is_watched_apart_from_the_answer(proxy: str) -> None:
    labels = {"kind": "verbatim", "part": "reasoning", "action": "observe"}
    before = metric(metrics(proxy), "loopfix_loops_detected_total", **labels)
    events = stream_events(proxy + CHAT, chat("think-loop"))
    assert texts(events) == ANSWER and texts(events, "reasoning_content").endswith(LOOP_UNIT)
    assert metric(metrics(proxy), "loopfix_loops_detected_total", **labels) == before + 1


def test_think_escape_of_a_completion_writes_the_marker_into_the_text(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    body = {"model": "loop", "prompt": "Q: path?\n<think>\n", "loopfix": {"action": "think-escape"}}
    reply = httpx.post(proxy + "/v1/completions", json=body, timeout=30).json()
    prompt = upstream.last().body["prompt"]
    kept = prompt.removeprefix("Q: path?\n<think>\n").removesuffix("\n</think>\n\n")
    assert prompt.endswith("\n</think>\n\n") and kept == INTRO + LOOP_UNIT
    assert reply["choices"][0]["text"] == kept + "\n</think>\n\n" + CONTINUATION


def test_a_rescue_the_upstream_cannot_continue_stops_the_choice(proxy: str) -> None:
    before = metric(metrics(proxy), "loopfix_rescues_total", outcome="failed")
    events = stream_events(proxy + CHAT, chat("loop-opaque", "rescue"))
    assert finish_reasons(events) == ["repetition"]
    assert (INTRO + LOOP_UNIT).startswith(texts(events))
    assert metric(metrics(proxy), "loopfix_rescues_total", outcome="failed") == before + 1


def test_without_holdback_the_client_sees_the_repeats_that_were_found(proxy: str) -> None:
    body = {**chat("loop"), "loopfix": {"action": "stop", "holdback_tokens": 0}}
    events = stream_events(proxy + CHAT, body)
    assert finish_reasons(events) == ["repetition"]
    text = texts(events)
    assert text.startswith(INTRO + LOOP_UNIT * 3) and (INTRO + LOOP_UNIT * 150).startswith(text)


def test_a_non_streamed_answer_has_every_choice_and_the_usage(proxy: str) -> None:
    reply = httpx.post(proxy + CHAT, json=chat("table-mixed", n=2), timeout=30).json()
    assert [c["message"]["content"] for c in reply["choices"]] == [TABLE, ANSWER]
    assert [c["finish_reason"] for c in reply["choices"]] == ["stop", "stop"]
    assert reply["usage"]["completion_tokens"] == 9  # the scripted upstream's usage event


def test_a_stopped_answer_reports_the_tokens_the_upstream_generated(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    body = chat("loop", "stop", stream_options={"include_usage": True})
    events = stream_events(proxy + CHAT, body)
    assert finish_reasons(events) == ["repetition"]
    last = events[-1]
    assert last["choices"] == [] and last["id"] == events[0]["id"]
    usage = last["usage"]
    # Counted one per upstream event read: at least what the client got, at most what was sent.
    assert len(words(texts(events))) <= usage["completion_tokens"] <= upstream.last().chunks
    assert usage["prompt_tokens"] == 0  # the scripted upstream reports it only at its end
    assert usage["total_tokens"] == usage["completion_tokens"]
    reply = httpx.post(proxy + CHAT, json=chat("loop", "stop"), timeout=30).json()
    assert reply["usage"]["completion_tokens"] >= len(
        words(reply["choices"][0]["message"]["content"])
    )
    unasked = stream_events(proxy + CHAT, chat("loop", "stop"))
    assert all("usage" not in event for event in unasked)  # OpenAI's default: no usage chunk


def test_a_loop_found_as_the_answer_ends_is_rescued_with_its_continuation(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    script = words(INTRO + LOOP_UNIT * 150)
    watcher = PartWatcher(DetectConfig(), keep_text=False)
    found_at = next(i for i, word in enumerate(script) if watcher.feed(word) is not None)
    # Cut at `found_at` words, the loop qualifies only when the stream ends and completes the
    # last word: the part is closed as the loop is found, and the continuation must reopen it.
    events = stream_events(proxy + CHAT, chat("loop", "rescue", max_tokens=found_at))
    kept = upstream.last().body["messages"][-1]["content"]
    assert kept == INTRO + LOOP_UNIT
    assert texts(events) == kept + CONTINUATION
    assert finish_reasons(events) == ["stop"]
