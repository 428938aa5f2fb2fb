"""A scripted OpenAI-compatible upstream: a real HTTP server on 127.0.0.1 that streams
server-sent events from scripts chosen by the request's `model`, one word per chunk, and
records every request body, how many chunks it wrote and whether the client hung up.

Scripts (per choice index; choice 1 of a `-mixed` model answers cleanly; an `-opaque` model has
no /tokenize):
- `loop`: an introduction, then one sentence repeated until 150 copies (a loop at greedy);
- `table`: a markdown table with 40 distinct rows; `list`: a numbered list of 100 distinct items;
- `think-loop`: `reasoning_content` that loops, then an answer (reached only if nobody stops it);
- `think-inline`: the same in `content`, inside `<think>` (a server without a reasoning parser);
- `repetition`: a short text ended with vLLM's finish_reason "repetition";
- `slow`: headers only after 3 s (none, and `disconnected` set, once the proxy closes the
  connection first); `broken`: an event that is not JSON.
A request that continues an answer (`continue_final_message`, or a prompt holding an answer's
text) gets `CONTINUATION`. `max_tokens` cuts an answer to that many chunks (finish "length").
POST /tokenize returns one id per whitespace-led word.

Faults (the hostile sweep of issue 37), by model or by a field of the body:
- `gzip-junk`: a body declared gzip that is not; `busy`: 429 with Retry-After;
  `moved`: 302 with a Location; a `-junktok` model's /tokenize answers junk;
- `raw_events` (a list of strings): those `data:` lines instead of the script, then, after
  `stall_s` seconds of silence, `[DONE]` unless `no_done` is true; `cut_off: true` declares a
  Content-Length the stream never reaches (its connection drops mid-body);
- `json_answer: true`: the script as one JSON completion, ignoring `stream: true`;
- `ScriptedUpstream.models_reply`: the raw body GET /v1/models answers (None: a model list).
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INTRO = "Let me work through this step by step before answering."
LOOP_UNIT = " We go back to node five and check the edge again."
CONTINUATION = " Therefore the answer is 42."
ANSWER = "The answer is 7."
TABLE = "| city | population | country |\n|---|---|---|\n" + "".join(
    f"| city{i} | {1000 + 37 * i} | land{i % 7} |\n" for i in range(40)
)
_ADJECTIVES = "red green blue old new big small warm cold dark".split()
_NOUNS = "apple pear chair table river stone cloud horse lamp book".split()
NUMBERED_LIST = "".join(
    f"{i + 1}. a {_ADJECTIVES[i // 10]} {_NOUNS[i % 10]}\n" for i in range(100)
)  # 100 distinct items
_TOKEN = re.compile(r"\s*\S+")


def words(text: str) -> list[str]:
    """The chunks a text streams in: one word with its leading whitespace each."""
    return _TOKEN.findall(text) + ([text[len(text.rstrip()) :]] if text != text.rstrip() else [])


def script(model: str, choice: int) -> tuple[list[tuple[str, str]], str]:
    """(field, text) chunks and the finish reason of `model`'s answer for `choice`."""
    base = model.removesuffix("-mixed").removesuffix("-opaque").removesuffix("-junktok")
    if model.endswith("-mixed") and choice == 1:
        base = "clean"
    if base == "loop":
        text = INTRO + LOOP_UNIT * 150
        return [("content", w) for w in words(text)], "length"
    if base == "table":
        return [("content", w) for w in words(TABLE)], "stop"
    if base == "list":
        return [("content", w) for w in words(NUMBERED_LIST)], "stop"
    if base == "think-loop":
        reasoning = [("reasoning_content", w) for w in words(INTRO + LOOP_UNIT * 150)]
        return reasoning + [("content", w) for w in words(ANSWER)], "stop"
    if base == "think-inline":
        text = "<think>\n" + INTRO + LOOP_UNIT * 150 + "\n</think>\n\n" + ANSWER
        return [("content", w) for w in words(text)], "stop"
    if base == "repetition":
        return [("content", w) for w in words(INTRO)], "repetition"
    return [("content", w) for w in words(ANSWER)], "stop"


@dataclass
class Record:
    """What one request did: its body, chunks written, whether the client hung up."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    chunks: int = 0
    disconnected: bool = False
    finished: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many clients connect at once (bench/bench_holdback.py)


class ScriptedUpstream:
    """Start with `with ScriptedUpstream() as upstream:`; `upstream.url` is its base URL."""

    def __init__(self, delay_s: float = 0.001):
        self.delay_s = delay_s
        self.records: list[Record] = []
        self.vocabulary: dict[str, int] = {}
        self.models_reply: bytes | None = None
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedUpstream:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def token_ids(self, text: str) -> list[int]:
        return [self.vocabulary.setdefault(t, len(self.vocabulary)) for t in _TOKEN.findall(text)]

    def last(self, path: str = "/v1/") -> Record:
        return [record for record in self.records if record.path.startswith(path)][-1]


def _continuing(body: dict[str, Any]) -> bool:
    """A continuation: chat's continue_final_message, or a prompt that resends an answer."""
    return bool(body.get("continue_final_message")) or INTRO in str(body.get("prompt", ""))


def _events(body: dict[str, Any], chat: bool) -> Iterator[dict[str, Any]]:
    model = str(body.get("model", "clean"))
    n = int(body.get("n") or 1)
    scripts = [
        ([("content", w) for w in words(CONTINUATION)], "stop")
        if _continuing(body)
        else script(model, i)
        for i in range(n)
    ]
    limit = body.get("max_tokens")
    if isinstance(limit, int):
        scripts = [
            (chunks[:limit], "length") if len(chunks) > limit else (chunks, finish)
            for chunks, finish in scripts
        ]
    envelope = {"id": "cmpl-scripted", "created": 1, "model": model}
    envelope["object"] = "chat.completion.chunk" if chat else "text_completion"
    longest = max(len(chunks) for chunks, _ in scripts)
    for step in range(longest + 1):
        for index, (chunks, finish) in enumerate(scripts):
            if step > len(chunks):
                continue
            done = step == len(chunks)
            name, text = chunks[step] if not done else ("content", "")
            if chat:
                delta = {name: text} if not done else {}
                if step == 0:
                    delta["role"] = "assistant"
                choice = {"index": index, "delta": delta, "finish_reason": finish if done else None}
            else:
                choice = {"index": index, "text": text, "finish_reason": finish if done else None}
            yield {**envelope, "choices": [choice]}
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**envelope, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}


def json_answer(body: dict[str, Any], chat: bool) -> dict[str, Any]:
    """The script as one non-streamed completion (what a server ignoring `stream` answers)."""
    texts: dict[int, dict[str, str]] = {}
    finishes: dict[int, str] = {}
    for event in _events(body, chat):
        for choice in event["choices"]:
            pieces = texts.setdefault(choice["index"], {})
            for name, text in (choice["delta"] if chat else {"text": choice["text"]}).items():
                if name != "role":
                    pieces[name] = pieces.get(name, "") + text
            finishes[choice["index"]] = choice["finish_reason"] or ""
    choices = [
        {"index": index, "finish_reason": finishes[index]}
        | ({"message": {"role": "assistant", **pieces}} if chat else pieces)
        for index, pieces in texts.items()
    ]
    usage = {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}
    kind = "chat.completion" if chat else "text_completion"
    return {"id": "cmpl-json", "object": kind, "created": 1, "choices": choices, "usage": usage}


def _handler(upstream: ScriptedUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:  # quiet: tests read the records instead
            pass

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _raw(self, status: int, data: bytes, **headers: str) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models" and upstream.models_reply is not None:
                self._raw(200, upstream.models_reply, Content_Type="text/html")
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "loop", "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "no such route"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            if self.path == "/tokenize":
                if str(body.get("model")).endswith("-opaque"):
                    self._json(404, {"error": {"message": "no /tokenize here"}})
                elif str(body.get("model")).endswith("-junktok"):
                    self._json(200, {"tokens": "not a list"})
                else:
                    self._json(200, {"tokens": upstream.token_ids(body["prompt"])})
                return
            record = Record(self.path, body, dict(self.headers))
            upstream.records.append(record)
            try:
                self._answer(record)
            except (BrokenPipeError, ConnectionResetError):
                record.disconnected = True
            finally:
                record.finished.set()

        def _answer(self, record: Record) -> None:
            body = record.body
            model = str(body.get("model"))
            if model == "slow":
                ready, _, _ = select.select([self.connection], [], [], 3)
                if ready and not self.connection.recv(1, socket.MSG_PEEK):
                    record.disconnected = True  # the proxy closed the connection (EOF)
                    return
            chat = self.path.endswith("/chat/completions")
            if self._fault(model, body, chat):
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if body.get("cut_off"):
                self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            if model == "broken":
                self.wfile.write(b"data: {not json\n\n")
                return
            if isinstance(body.get("raw_events"), list):
                for data in body["raw_events"]:
                    self.wfile.write(f"data: {data}\n\n".encode())
                time.sleep(float(body.get("stall_s", 0)))
                if not body.get("no_done"):
                    self.wfile.write(b"data: [DONE]\n\n")
                return
            for event in _events(body, chat):
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                record.chunks += 1
                time.sleep(upstream.delay_s)
            self.wfile.write(b"data: [DONE]\n\n")

        def _fault(self, model: str, body: dict[str, Any], chat: bool) -> bool:
            """Answer a fault that is no event stream; False when there is none."""
            if model == "bad-request":
                self._json(400, {"error": {"message": "max_tokens is too large"}})
            elif model == "busy":
                self._raw(429, b'{"error": {"message": "busy"}}', Retry_After="7")
            elif model == "moved":
                self._raw(302, b"", Location="http://elsewhere.invalid/v1/chat/completions")
            elif model == "gzip-junk":
                self._raw(
                    200,
                    b"this is not gzip",
                    Content_Type="text/event-stream",
                    Content_Encoding="gzip",
                )
            elif model == "endless-json":  # ignores `stream`; its answer never ends
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                for _ in range(1024):  # 1 GiB at most: the proxy hangs up long before
                    self.wfile.write(b" " * (1 << 20))
            elif body.get("json_answer"):
                self._json(200, json_answer(body, chat))
            else:
                return False
            return True

    return Handler
