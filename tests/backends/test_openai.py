"""The openai backend against a real HTTP server on 127.0.0.1 (stdlib): retries, finish reasons,
reasoning, malformed replies, an unreachable server."""

import json
import socket
import time
from pathlib import Path

import pytest

from loopfix.backends.base import BackendError, Request
from loopfix.backends.openai import OpenAIBackend
from loopfix.records import DecodeSettings
from loopfix.scan import ScanConfig, run_scan

from .fake_openai import completion_events, fake_server, sse

SETTINGS = DecodeSettings(temperature=0.6, top_k=20, max_new_tokens=8, presence_penalty=1.5)


def backend_for(url: str, **options: object) -> OpenAIBackend:
    return OpenAIBackend(url, api="completions", backoff=0.01, **options)  # type: ignore[arg-type]


def test_retries_429_and_5xx_then_streams_text_ids_and_reasons() -> None:
    with fake_server() as server:
        server.script = [
            (429, {"Retry-After": "0"}, ["slow down"]),
            (503, {}, ["busy"]),
            (200, {}, completion_events([" ka", " be"], "length", ids=[1, 2])),
        ]
        backend = backend_for(server.url, concurrency=2)
        [(index, generation)] = list(backend.generate([Request(text="<s> ka", seed=9)], SETTINGS))
        backend.close()
    assert index == 0
    assert (generation.text, generation.tokens, generation.finish_reason) == (
        " ka be",
        [1, 2],
        "length",
    )
    assert len(server.bodies) == 3
    body = server.bodies[-1]
    assert body["path"] == "/v1/completions" and body["model"] == "fake-model"
    assert (body["prompt"], body["seed"], body["top_k"], body["presence_penalty"]) == (
        "<s> ka",
        9,
        20,
        1.5,
    )
    assert body["stream"] is True and "min_p" not in body and "stop" not in body


def test_stop_texts_are_sent_and_the_one_that_ended_the_reply_is_kept() -> None:
    events = completion_events([" 1,", " 2"], "stop", ids=[1, 2])
    # vLLM's `stop_reason`: which stop text ended the reply (it is not in the text).
    events.insert(-1, sse([{"choices": [{"index": 0, "text": "", "stop_reason": "\nQ:"}]}])[0])
    with fake_server() as server:
        server.script = [(200, {}, events)]
        backend = backend_for(server.url)
        request = Request(text="Q: count\nA:", stop=("\nQ:",))
        [(_, generation)] = list(backend.generate([request], SETTINGS))
        backend.close()
    assert server.bodies[-1]["stop"] == ["\nQ:"]
    assert (generation.text, generation.finish_reason, generation.stop) == (" 1, 2", "stop", "\nQ:")


def test_chat_reasoning_and_repetition_stop_become_a_loop_record(tmp_path: Path) -> None:
    events = [
        {"choices": [{"delta": {"reasoning_content": "think think"}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": r"so \boxed{4}"}, "finish_reason": "repetition"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 9}},
    ]
    suite = tmp_path / "suite.jsonl"
    suite.write_text(
        json.dumps({"id": "q", "prompt": "2+2?", "answer": "4", "checker": "boxed"}) + "\n"
    )
    with fake_server() as server:
        server.default = (200, {}, sse(events))
        config = ScanConfig(
            model=server.url,
            backend="openai",
            model_name="m",
            suite=str(suite),
            temperatures=[0.0],
            max_new_tokens=16,
            think=False,
            out=tmp_path / "run",
        )
        result = run_scan(config)
    record = json.loads((tmp_path / "run" / "records.jsonl").read_text())
    assert record["finish_reason"] == "repetition" and record["correct"] is True
    assert record["text"] == "think think\n</think>\n\n" + r"so \boxed{4}"
    assert result.summary.settings[0].loop_rate.value == 1.0
    # No token ids from this server: the length is the count its usage event reported.
    assert record["tokens"] == [] and record["length"] == 9
    assert result.summary.settings[0].mean_length == 9
    assert server.bodies[0]["stream_options"] == {"include_usage": True}
    assert server.bodies[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert server.bodies[0]["messages"] == [{"role": "user", "content": "2+2?"}]


def test_client_error_fails_one_request_and_malformed_reply_stops() -> None:
    with fake_server() as server:
        server.script = [(400, {}, ['{"error": "prompt too long"}'])]
        backend = backend_for(server.url)
        [(_, failed)] = list(backend.generate([Request(text="x")], SETTINGS))
        assert failed.finish_reason == "error" and "prompt too long" in (failed.error or "")
        server.script = [(200, {}, ["data: {not json\n\n"])]
        with pytest.raises(BackendError, match="malformed reply"):
            list(backend.generate([Request(text="x")], SETTINGS))
        server.script = [(200, {}, sse([{"no_choices": True}]))]
        with pytest.raises(BackendError, match="without a 'choices' list"):
            list(backend.generate([Request(text="x")], SETTINGS))
        backend.close()


def test_unreachable_server_is_a_clear_error_and_the_store_is_untouched(tmp_path: Path) -> None:
    with fake_server() as server:
        server.default = (200, {}, completion_events([" ka"], "stop"))
        url = server.url
        config = ScanConfig(
            model=url,
            backend="openai",
            api="completions",
            suite="stargraph",
            n=3,
            temperatures=[0.0],
            max_new_tokens=4,
            out=tmp_path / "run",
        )
        run_scan(config)
    records = (tmp_path / "run" / "records.jsonl").read_bytes()
    started = time.monotonic()  # the server is gone now: resuming cannot reach it
    with pytest.raises(BackendError, match=r"cannot reach http://127\.0\.0\.1:\d+/v1/models"):
        run_scan(config)
    assert time.monotonic() - started < 10
    assert (tmp_path / "run" / "records.jsonl").read_bytes() == records


def test_nothing_listens_on_a_closed_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BackendError, match="cannot reach"):
        backend_for(f"http://127.0.0.1:{port}")


def test_a_server_that_is_not_openai_is_an_error_naming_what_it_answered() -> None:
    """An HTML page, a stream without a choice: a BackendError, never samples with empty text
    (the doctor read such a server as "no sample looped")."""
    page = ["<html><body>Welcome</body></html>"]
    with fake_server() as server:
        backend = backend_for(server.url)
        server.script = [(200, {"Content-Type": "text/html; charset=utf-8"}, page)]
        with pytest.raises(BackendError, match=r"answered text/html, not an OpenAI stream"):
            list(backend.generate([Request(text="x")], SETTINGS))
        server.script = [(200, {}, ["data: [DONE]\n\n"])]
        with pytest.raises(BackendError, match="without any completion choice"):
            list(backend.generate([Request(text="x")], SETTINGS))
        server.script = [(200, {"Content-Type": "application/json"}, ['{"detail": "hi"}'])]
        with pytest.raises(BackendError, match="without a 'choices' list"):
            list(backend.generate([Request(text="x")], SETTINGS))
        backend.close()


def test_a_plain_json_answer_to_a_stream_request_is_read_as_the_completion_it_is() -> None:
    answer = {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    with fake_server() as server:
        server.script = [(200, {"Content-Type": "application/json"}, [json.dumps(answer)])]
        backend = OpenAIBackend(server.url, api="chat", backoff=0.01)
        [(_, generation)] = list(backend.generate([Request(text="2+2?")], SETTINGS))
        backend.close()
    assert (generation.text, generation.finish_reason, generation.token_count) == ("4", "stop", 1)
