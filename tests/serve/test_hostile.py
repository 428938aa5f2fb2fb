"""Issue 37's hostile sweep through a real proxy: every junk input, from the client or the
upstream, gets a well-formed OpenAI error with the right status (400 client junk, 413 over the
body limit, 502 upstream junk; in a stream, a final error event), is counted in /metrics with
that status, and no text is silently dropped."""

import base64
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from loopfix.serve import ServeConfig
from loopfix.serve.protocol import MAX_ANSWER_BYTES, MAX_CHOICES, MAX_TOOL_CALLS

from .proxy import (
    assert_openai_error,
    finish_reasons,
    requests_counted,
    running_proxy,
    stream_events,
    texts,
)
from .scripted_upstream import ANSWER, INTRO, LOOP_UNIT, ScriptedUpstream

CHAT = "/v1/chat/completions"
LIMIT = 16_384  # max_body_bytes of the proxy under test


@pytest.fixture(scope="module")
def proxy(upstream: ScriptedUpstream) -> Iterator[str]:
    with running_proxy(ServeConfig(upstream=upstream.url, max_body_bytes=LIMIT)) as url:
        yield url


def chat(model: str = "clean", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


def stream_error(proxy: str, body: dict[str, Any]) -> dict[str, Any]:
    """The final error event of a stream that failed after its headers (200)."""
    events = stream_events(proxy + CHAT, body)
    assert "error" in events[-1], events[-3:]
    error = events[-1]["error"]
    assert set(error) >= {"message", "type", "code"}
    return dict(error)


def assert_counts(proxy: str, status: int, request: Any, expected: int = 1) -> None:
    """`request()` adds `expected` answers of `status` to /metrics."""
    before = requests_counted(proxy, status)
    request()
    assert requests_counted(proxy, status) == before + expected


def tool_call(call: dict[str, Any]) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})


MALFORMED_EVENTS = {
    "choice not an object": '{"choices": ["x"]}',
    "index not an integer": '{"choices": [{"index": "a", "delta": {"content": "hi"}}]}',
    "choices an object": '{"choices": {}}',
    "delta a string": '{"choices": [{"index": 0, "delta": "str"}]}',
    "content a number": '{"choices": [{"index": 0, "delta": {"content": 5}}]}',
    # Issue 56: each of these made a non-streamed answer allocate without bound, or a 500.
    "tool call index past the bound": tool_call({"index": MAX_TOOL_CALLS}),
    "tool call index of 20 GB": tool_call({"index": 99_999_999}),
    "tool call without index": tool_call({"function": {"name": "f"}}),
    "tool call function a string": tool_call({"index": 0, "function": "f"}),
    "tool call name a number": tool_call({"index": 0, "function": {"name": 5}}),
    "choice the request did not ask for": '{"choices": [{"index": 1, "delta": {"content": "hi"}}]}',
    "choice index huge": '{"choices": [{"index": 1000000000000, "delta": {}}]}',
    "logprobs a string": '{"choices": [{"index": 0, "delta": {}, "logprobs": "x"}]}',
}


@pytest.mark.parametrize("event", MALFORMED_EVENTS.values(), ids=MALFORMED_EVENTS.keys())
def test_a_malformed_event_is_a_502_never_a_crash_or_lost_text(proxy: str, event: str) -> None:
    body = chat(raw_events=[event])
    reply = httpx.post(proxy + CHAT, json=body)
    assert "malformed event" in assert_openai_error(reply, 502)
    assert_counts(proxy, 502, lambda: stream_error(proxy, body))
    stopping = {**body, "loopfix": {"action": "stop"}}
    assert "malformed event" in stream_error(proxy, stopping)["message"]


@pytest.mark.parametrize(
    "number", ["1" * 5000, "1e999", "NaN"], ids=["5000 digits", "1e999", "NaN"]
)
def test_a_number_python_cannot_hold_is_a_502_or_a_400(proxy: str, number: str) -> None:
    """A 5,000-digit integer (over Python's 4,300-digit limit) was a 500; an infinite float
    would go on as `Infinity`, which is no JSON."""
    event = '{"choices": [], "usage": {"prompt_tokens": NUMBER}}'.replace("NUMBER", number)
    reply = httpx.post(proxy + CHAT, json=chat(raw_events=[event]))
    assert "not JSON" in assert_openai_error(reply, 502)
    raw = json.dumps(chat()).replace('"model"', f'"max_tokens": {number}, "model"')
    assert "not JSON" in assert_openai_error(httpx.post(proxy + CHAT, content=raw), 400)


def test_junk_bodies_from_the_upstream_are_502s(proxy: str, upstream: ScriptedUpstream) -> None:
    assert_counts(
        proxy,
        502,
        lambda: assert_openai_error(httpx.post(proxy + CHAT, json=chat("gzip-junk")), 502),
    )
    assert "does not decode" in stream_error(proxy, chat("gzip-junk"))["message"]
    upstream.models_reply = b"<html>upstream login page</html>"
    try:
        before = requests_counted(proxy, 502, "/v1/models")
        assert "not JSON" in assert_openai_error(httpx.get(proxy + "/v1/models"), 502)
        assert requests_counted(proxy, 502, "/v1/models") == before + 1
    finally:
        upstream.models_reply = None


def test_an_answer_that_never_ends_is_a_502_read_no_further_than_its_bound(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    """An upstream that ignores `stream` and sends a JSON answer without end: the proxy stops
    reading at MAX_ANSWER_BYTES and hangs up, instead of holding it all."""
    message = assert_openai_error(httpx.post(proxy + CHAT, json=chat("endless-json")), 502)
    assert f"longer than {MAX_ANSWER_BYTES} bytes" in message
    record = upstream.last()
    assert record.finished.wait(10) and record.disconnected


def test_a_cut_stream_is_an_error_after_the_text_it_carried(proxy: str) -> None:
    started = json.dumps({"choices": [{"index": 0, "delta": {"content": "Half an"}}]})
    body = chat(raw_events=[started], no_done=True, loopfix={"action": "stop"})
    events = stream_events(proxy + CHAT, body)
    assert texts(events[:-1]) == "Half an"  # the held text is released, then the error
    assert "ended before every choice finished" in events[-1]["error"]["message"]
    assert_counts(proxy, 502, lambda: stream_error(proxy, body))
    assert_openai_error(httpx.post(proxy + CHAT, json=body), 502)
    finished = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    complete = chat(raw_events=[started, finished], no_done=True)  # finished, only no [DONE]
    assert finish_reasons(stream_events(proxy + CHAT, complete)) == ["stop"]


@pytest.mark.parametrize("action", ["observe", "stop"])
def test_an_upstream_ignoring_stream_true_is_read_as_one_event(proxy: str, action: str) -> None:
    body = chat(json_answer=True, loopfix={"action": action})
    events = stream_events(proxy + CHAT, body)
    assert texts(events) == ANSWER and finish_reasons(events) == ["stop"]
    reply = httpx.post(proxy + CHAT, json=body).json()
    assert reply["choices"][0]["message"]["content"] == ANSWER
    assert reply["usage"]["completion_tokens"] == 9
    looping = httpx.post(
        proxy + CHAT, json=chat("loop", json_answer=True, loopfix={"action": "stop"})
    )
    choice = looping.json()["choices"][0]
    assert choice["finish_reason"] == "repetition"
    assert (INTRO + LOOP_UNIT).startswith(choice["message"]["content"])


def test_retry_after_is_passed_on_and_a_redirect_is_a_502(proxy: str) -> None:
    busy = httpx.post(proxy + CHAT, json=chat("busy"))
    assert assert_openai_error(busy, 429) == "busy" and busy.headers["retry-after"] == "7"
    streamed_busy = httpx.post(proxy + CHAT, json=chat("busy", stream=True))
    assert streamed_busy.headers["retry-after"] == "7"
    moved = httpx.post(proxy + CHAT, json=chat("moved"))
    assert "HTTP 302" in assert_openai_error(moved, 502) and "location" not in moved.headers
    assert_counts(proxy, 429, lambda: httpx.post(proxy + CHAT, json=chat("busy")))


def test_junk_from_tokenize_fails_the_rescue_not_the_request(proxy: str) -> None:
    body = chat("loop-junktok", loopfix={"action": "rescue"})
    events = stream_events(proxy + CHAT, body)
    assert finish_reasons(events) == ["repetition"]
    assert (INTRO + LOOP_UNIT).startswith(texts(events))


BAD_CLIENT_BODIES = {
    "n a string": (json.dumps(chat(n="five")), "n: must be a positive integer"),
    "n a list": (json.dumps(chat(n=[1])), "n: must be a positive integer"),
    "n zero": (json.dumps(chat(n=0)), "n: must be a positive integer"),
    "n true": (json.dumps(chat(n=True)), "n: must be a positive integer"),
    "deep nesting": ("[" * 5_000 + "]" * 5_000, "nested too deeply"),
    "loopfix a list": (json.dumps(chat(loopfix=[1])), "loopfix"),
    "n over the bound": (json.dumps(chat(n=MAX_CHOICES + 1)), f"at most {MAX_CHOICES} choices"),
}


@pytest.mark.parametrize(
    ("raw", "expected"), BAD_CLIENT_BODIES.values(), ids=BAD_CLIENT_BODIES.keys()
)
def test_client_junk_is_a_400_naming_the_field(proxy: str, raw: str, expected: str) -> None:
    def post() -> None:
        for stream in (False, True):
            data = raw.replace('"model"', f'"stream": {json.dumps(stream)}, "model"', 1)
            message = assert_openai_error(httpx.post(proxy + CHAT, content=data), 400)
            assert expected in message

    assert_counts(proxy, 400, post, expected=2)


def test_a_body_over_the_limit_is_a_413(proxy: str) -> None:
    big = chat(messages=[{"role": "user", "content": "x" * LIMIT}])
    assert_counts(proxy, 413, lambda: assert_openai_error(httpx.post(proxy + CHAT, json=big), 413))
    # Without a Content-Length (chunked), the limit holds while reading.
    pieces = iter([json.dumps(big).encode()])
    chunked = httpx.post(proxy + CHAT, content=pieces)
    assert f"larger than {LIMIT} bytes" in assert_openai_error(chunked, 413)
    assert httpx.post(proxy + CHAT, json=chat()).status_code == 200


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_hanging_up_cancels_the_upstream_within_a_second(stream: bool) -> None:
    with (
        ScriptedUpstream(delay_s=0.01) as slow,  # the loop script takes 16 s
        running_proxy(ServeConfig(upstream=slow.url)) as url,
    ):
        if stream:  # the client reads the first event and closes
            with httpx.stream("POST", url + CHAT, json=chat("loop", stream=True)) as reply:
                next(reply.iter_lines())
        else:
            with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes
                httpx.post(url + CHAT, json=chat("loop"), timeout=0.5)
        record = slow.last()
        assert record.finished.wait(1.5) and record.disconnected, record.chunks
        assert record.chunks < 200
        assert requests_counted(url, 499) == 1


def test_prompts_over_the_choice_bound_are_a_400(proxy: str) -> None:
    prompts = {"model": "clean", "prompt": ["a"] * (MAX_CHOICES + 1)}
    reply = httpx.post(proxy + "/v1/completions", json=prompts)
    assert f"at most {MAX_CHOICES} choices" in assert_openai_error(reply, 400)


def counted_soon(url: str, status: int) -> float:
    """The answers counted with `status`, once the proxy counted its answer in flight."""
    deadline = time.monotonic() + 2
    while requests_counted(url, status) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return requests_counted(url, status)


@pytest.mark.parametrize("stream", [False, True])
def test_a_raw_socket_hanging_up_before_the_upstream_answers_closes_it(stream: bool) -> None:
    """Issue 56: a client that closes its socket while the upstream has not sent its headers
    yet (a busy server; `slow` sends them after 3 s). The proxy waited for them, then counted
    the non-streamed answer it built for nobody as a 200."""
    with ScriptedUpstream() as upstream, running_proxy(ServeConfig(upstream=upstream.url)) as url:
        data = json.dumps(chat("slow", stream=stream)).encode()
        head = f"POST {CHAT} HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as client:
            client.sendall(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
            time.sleep(1)
        record = upstream.last()
        assert record.finished.wait(1.5) and record.disconnected  # closed, not answered
        assert counted_soon(url, 499) == 1 and requests_counted(url, 200) == 0


STARTED = json.dumps({"choices": [{"index": 0, "delta": {"content": "Half an answer"}}]})


@pytest.mark.parametrize(
    ("fault", "status"), [({"stall_s": 1.5}, 504), ({"cut_off": True, "no_done": True}, 502)]
)
def test_a_stalled_or_dropped_upstream_gets_the_held_words_out_first(
    upstream: ScriptedUpstream, fault: dict[str, Any], status: int
) -> None:
    """Issue 56: under stop the words held back were lost when the upstream stalled past the
    read timeout or dropped its connection; the client got the error event only."""
    body = chat(raw_events=[STARTED], loopfix={"action": "stop"}, **fault)
    with running_proxy(ServeConfig(upstream=upstream.url, read_timeout_s=0.5)) as url:
        events = stream_events(url + CHAT, body)
        assert texts(events[:-1]) == "Half an answer"
        assert events[-1]["error"]["message"].startswith("upstream")
        assert requests_counted(url, status) == 1
        assert_openai_error(httpx.post(url + CHAT, json=body), status)  # no text: an error


def test_no_secret_from_the_upstream_url_or_a_query_string_is_logged(
    upstream: ScriptedUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with_password = upstream.url.replace("http://", "http://alice:PW-SECRET-9@")
    with caplog.at_level(logging.DEBUG), running_proxy(ServeConfig(upstream=with_password)) as url:
        reply = httpx.post(url + CHAT + "?api_key=QUERY-SECRET-7", json=chat())
        assert reply.status_code == 200
    sent = upstream.last().headers["Authorization"]
    assert base64.b64decode(sent.removeprefix("Basic ")) == b"alice:PW-SECRET-9"
    own = f"HTTP Request: POST {url}"  # this test's client logs its own request line
    logged = "\n".join(
        record.getMessage() for record in caplog.records if not record.getMessage().startswith(own)
    )
    assert "POST /v1/chat/completions" in logged  # the access log and httpx's request line
    assert "127.0.0.1:" in logged and "/v1/chat/completions" in logged
    assert "PW-SECRET" not in logged and "QUERY-SECRET" not in logged and "alice" not in logged
