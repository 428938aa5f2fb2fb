"""A small real OpenAI-style HTTP server for tests (stdlib only): it answers from a script of
replies, one per POST, and records the bodies it received."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], list[str]]  # status, headers, body lines (SSE events)


def sse(events: list[dict[str, Any]]) -> list[str]:
    return [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]


def completion_events(words: list[str], finish: str, ids: list[int] | None = None) -> list[str]:
    events = [
        {
            "choices": [
                {
                    "index": 0,
                    "text": word,
                    "finish_reason": None,
                    **({"token_ids": [ids[i]]} if ids else {}),
                }
            ]
        }
        for i, word in enumerate(words)
    ]
    events.append({"choices": [{"index": 0, "text": "", "finish_reason": finish}]})
    return sse(events)


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Reply] = []
        self.default: Reply | None = None
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_reply(self) -> Reply:
        with self.lock:
            if self.script:
                return self.script.pop(0)
        assert self.default is not None, "the fake server ran out of scripted replies"
        return self.default


class _Handler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _send(self, status: int, headers: dict[str, str], lines: list[str]) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "text/event-stream", **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        for line in lines:
            self.wfile.write(line.encode())
            self.wfile.flush()

    def do_GET(self) -> None:
        self._send(
            200,
            {"Content-Type": "application/json"},
            [json.dumps({"data": [{"id": "fake-model"}]})],
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        with self.server.lock:
            self.server.bodies.append({"path": self.path, **body})
        self._send(*self.server.next_reply())


@contextmanager
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
