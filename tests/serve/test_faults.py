"""Faults through a real proxy: upstream down or slow (502/504, OpenAI-shaped), upstream errors
passed on, malformed JSON (400), unknown routes (404), the API key (401; never logged), and a
client that hangs up (the upstream request is closed)."""

import json
import logging
import time

import httpx
import pytest

from loopfix.serve import ServeConfig

from .proxy import assert_openai_error, free_port, running_proxy
from .scripted_upstream import ScriptedUpstream

CHAT = "/v1/chat/completions"
KEY = "sk-test-secret-4711"


def body(model: str) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "hello there"}]}


def test_an_unreachable_upstream_is_a_502() -> None:
    config = ServeConfig(upstream=f"http://127.0.0.1:{free_port()}", connect_timeout_s=2)
    with running_proxy(config) as proxy:
        assert "unreachable" in assert_openai_error(httpx.post(proxy + CHAT, json=body("x")), 502)
        reply = httpx.post(proxy + CHAT, json={**body("x"), "stream": True})
        assert_openai_error(reply, 502)
        assert httpx.get(proxy + "/healthz").json() == {"status": "ok"}


def test_a_silent_upstream_is_a_504(upstream: ScriptedUpstream) -> None:
    with running_proxy(ServeConfig(upstream=upstream.url, read_timeout_s=0.5)) as proxy:
        started = time.monotonic()
        assert_openai_error(httpx.post(proxy + CHAT, json=body("slow"), timeout=10), 504)
        assert time.monotonic() - started < 2.5  # the timeout, not the upstream's 3 s


def test_upstream_errors_and_bad_requests(upstream: ScriptedUpstream) -> None:
    with running_proxy(ServeConfig(upstream=upstream.url)) as proxy:
        message = assert_openai_error(httpx.post(proxy + CHAT, json=body("bad-request")), 400)
        assert message == "max_tokens is too large"  # the upstream's own words
        assert_openai_error(httpx.post(proxy + CHAT, json=body("broken")), 502)
        raw = httpx.post(proxy + CHAT, content=b"{not json", headers={"content-type": "x"})
        assert "not JSON" in assert_openai_error(raw, 400)
        assert_openai_error(httpx.post(proxy + CHAT, json=[1, 2]), 400)
        assert_openai_error(httpx.post(proxy + "/v1/embeddings", json=body("x")), 404)
        assert_openai_error(httpx.get(proxy + "/nowhere"), 404)
        assert httpx.get(proxy + "/v1/models").json()["data"][0]["id"] == "loop"


def test_the_api_key_is_required_and_never_logged(
    upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("LOOPFIX_TEST_KEY", KEY)
    config = ServeConfig(upstream=upstream.url, api_key_env="LOOPFIX_TEST_KEY", action="stop")
    secret_body = {**body("loop"), "messages": [{"role": "user", "content": "PRIVATE-PROMPT"}]}
    with caplog.at_level(logging.DEBUG), running_proxy(config) as proxy:
        assert_openai_error(httpx.post(proxy + CHAT, json=secret_body), 401)
        wrong = {"Authorization": "Bearer nope"}
        assert_openai_error(httpx.post(proxy + CHAT, json=secret_body, headers=wrong), 401)
        assert_openai_error(httpx.get(proxy + "/v1/models"), 401)
        right = {"Authorization": f"Bearer {KEY}"}
        reply = httpx.post(proxy + CHAT, json=secret_body, headers=right, timeout=30)
        assert reply.json()["choices"][0]["finish_reason"] == "repetition"
        assert httpx.get(proxy + "/metrics").status_code == 200  # scrapes need no key
        bad = httpx.post(proxy + CHAT, content=b"PRIVATE-PROMPT {", headers=right)
        assert_openai_error(bad, 400)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/v1/chat/completions" in logged  # the requests were logged ...
    assert KEY not in logged and "PRIVATE-PROMPT" not in logged  # ... without key or body
    assert "Authorization" not in upstream.last().headers  # the client's key stays here


def test_a_client_hanging_up_closes_the_upstream_request(upstream: ScriptedUpstream) -> None:
    with running_proxy(ServeConfig(upstream=upstream.url)) as proxy:
        request = {**body("loop"), "stream": True}
        with httpx.stream("POST", proxy + CHAT, json=request, timeout=10) as reply:
            lines = reply.iter_lines()
            first = next(line for line in lines if line.startswith("data:"))
            assert json.loads(first[5:])["choices"][0]["delta"]["role"] == "assistant"
        record = upstream.last()
        at_hang_up = record.chunks
        assert record.finished.wait(5) and record.disconnected
        # The upstream's next writes failed: a few chunks at most, not the 1,650 left.
        assert record.chunks - at_hang_up <= 5, (at_hang_up, record.chunks)
