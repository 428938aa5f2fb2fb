"""Run the proxy for real: uvicorn on a free 127.0.0.1 port in a thread, and read its streams."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

from loopfix.serve import ServeConfig, create_app
from tests.server_process import free_port


@contextmanager
def running_proxy(config: ServeConfig) -> Iterator[str]:
    """Serve `create_app(config)` and yield its base URL; stopped on exit."""
    port = free_port()
    app = create_app(config)
    # log_config=None: uvicorn's loggers propagate to the root logger (pytest's caplog).
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the proxy did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def stream_events(url: str, body: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
    """POST a streaming request and return its events (without [DONE], which must end it)."""
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", url, json={**body, "stream": True}, timeout=30, **kwargs) as reply:
        assert reply.status_code == 200, reply.read()
        lines = [line for line in reply.iter_lines() if line.startswith("data:")]
    assert lines and lines[-1] == "data: [DONE]", lines[-3:]
    for line in lines[:-1]:
        events.append(json.loads(line[5:]))
    return events


def texts(events: list[dict[str, Any]], field: str = "content", index: int = 0) -> str:
    """One choice's text of `field` over a stream's events."""
    pieces = []
    for event in events:
        for choice in event.get("choices", []):
            if choice["index"] == index:
                source = choice.get("delta", choice)
                pieces.append(source.get(field) or "")
    return "".join(pieces)


def finish_reasons(events: list[dict[str, Any]], index: int = 0) -> list[str]:
    return [
        choice["finish_reason"]
        for event in events
        for choice in event.get("choices", [])
        if choice["index"] == index and choice.get("finish_reason")
    ]


def assert_openai_error(reply: httpx.Response, status: int) -> str:
    """Check an OpenAI-shaped error answer with `status`; its message."""
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert set(error) >= {"message", "type", "code"} and error["message"], error
    return str(error["message"])


def metric_total(url: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples in the /metrics of the server at `url` whose labels include
    `labels` (any other labels)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def requests_counted(proxy: str, status: int, route: str = "/v1/chat/completions") -> float:
    """How many answers with `status` the proxy counted on `route` (any action)."""
    return metric_total(proxy, "loopfix_requests_total", route=route, status=str(status))


def metric(metrics_text: str, name: str, **labels: str) -> float:
    """The value of the sample with exactly these labels in a /metrics text (0 when absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0
