"""`Upstream`: the proxy's client of the OpenAI-compatible server behind it.

Every generation request goes upstream as a stream (`stream: true`), also for clients that did
not ask for one: the proxy must see tokens as they come to stop a loop early. An upstream that
ignores `stream` and answers one JSON completion is read as a stream of one event per choice.
Failures become `UpstreamError`s carrying the HTTP status the proxy answers with: 502 when the
upstream cannot be reached, redirects, or answers garbage (a body that does not decode, an event
that is not OpenAI-shaped, a stream that ends before its choices finished), 504 when it times
out, the upstream's own status (and message, and Retry-After) when it answers with an error.
A user and password in the base URL are sent as basic auth, never as part of a logged URL.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx

from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import (
    CHAT_PATH,
    MAX_ANSWER_BYTES,
    MAX_EVENT_BYTES,
    MAX_TOOL_CALLS,
    TEXT_FIELDS,
    Delta,
    ErrorBody,
    RequestBody,
    StreamChoice,
    StreamChunk,
    choice_count,
    envelope,
    error_body,
)


class UpstreamError(Exception):
    """A failed upstream exchange, with the status and OpenAI-style body to answer with."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "upstream_error",
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = headers or {}  # passed on to the client (Retry-After)

    def body(self) -> ErrorBody:
        return error_body(self.message, self.kind)


# Headers of an upstream error answer that the client needs to act on it.
_FORWARDED_HEADERS = ("retry-after",)


def _upstream_message(response: httpx.Response, content: bytes) -> str:
    try:
        error = parse_json(content).get("error")
    except (ValueError, AttributeError, RecursionError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return f"upstream answered HTTP {response.status_code}"


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # it would be re-encoded as Infinity, which is no JSON
        raise ValueError(f"{text} is out of range")
    return number


def parse_json(text: str | bytes) -> Any:
    """JSON as sent upstream or by a client, with every number finite; ValueError (also for an
    integer over Python's 4,300 digits) or RecursionError if it is not."""
    return json.loads(text, parse_float=_finite, parse_constant=_finite)


def _failure(error: httpx.HTTPError, metrics: ServeMetrics, stage: str) -> UpstreamError:
    """The UpstreamError (and the counted reason) an httpx failure during `stage` stands for."""
    name = type(error).__name__
    if isinstance(error, httpx.TimeoutException):
        metrics.upstream_errors.labels("timeout").inc()
        return UpstreamError(504, f"upstream timed out ({stage})")
    if isinstance(error, httpx.DecodingError):  # e.g. a gzip body that is not gzip
        metrics.upstream_errors.labels("protocol").inc()
        return UpstreamError(502, f"upstream sent a body that does not decode ({stage}): {name}")
    metrics.upstream_errors.labels("connect").inc()
    return UpstreamError(502, f"upstream unreachable ({stage}): {name}")


def _protocol_error(metrics: ServeMetrics, message: str) -> UpstreamError:
    metrics.upstream_errors.labels("protocol").inc()
    return UpstreamError(502, message)


def _status_error(response: httpx.Response, content: bytes, metrics: ServeMetrics) -> UpstreamError:
    """An answer other than 200: an error status is passed on with its message and
    Retry-After; a redirect or another success the proxy cannot use is the upstream's fault."""
    metrics.upstream_errors.labels("status").inc()
    status = response.status_code
    if status < 400:
        # The Location (which may name an internal host) is not passed on: the client could
        # not follow it through the proxy anyway.
        return UpstreamError(
            502,
            f"upstream answered HTTP {status}; --upstream must be the URL "
            "that answers, not one that redirects",
        )
    headers = {
        name: response.headers[name] for name in _FORWARDED_HEADERS if name in response.headers
    }
    return UpstreamError(status, _upstream_message(response, content), headers=headers)


def _not_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def _in_range(index: object, bound: int) -> bool:
    return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < bound


def _wrong(fields: dict[str, object], kind: type, name: str) -> str | None:
    """The first of `fields` that is present and no `kind`."""
    wrong = (key for key, value in fields.items() if not isinstance(value, (kind, type(None))))
    return next((f".{key} is not {name}" for key in wrong), None)


def _tool_call_problem(call: object) -> str | None:
    if not isinstance(call, dict) or not _in_range(call.get("index"), MAX_TOOL_CALLS):
        return f" is not an object with an index from 0 to {MAX_TOOL_CALLS - 1}"
    function = call.get("function")
    if not isinstance(function, (dict, type(None))):
        return ".function is not an object"
    strings = {"id": call.get("id"), "type": call.get("type")}
    strings |= {f"function.{key}": (function or {}).get(key) for key in ("name", "arguments")}
    return _wrong(strings, str, "a string")


def _choice_problem(choice: object, choices: int) -> str | None:
    if not isinstance(choice, dict) or not _in_range(choice.get("index", 0), choices):
        return f" is not an object with an index from 0 to {choices - 1} (the choices asked for)"
    delta = choice.get("delta")
    problem = _wrong({"delta": delta, "logprobs": choice.get("logprobs")}, dict, "an object")
    if problem is not None:
        return problem
    strings = {"text": choice.get("text"), "finish_reason": choice.get("finish_reason")}
    strings |= {f"delta.{name}": (delta or {}).get(name) for name in TEXT_FIELDS}
    calls = (delta or {}).get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return ".delta.tool_calls is not a list"
    for position, call in enumerate(calls or []):
        problem = _tool_call_problem(call)
        if problem is not None:
            return f".delta.tool_calls[{position}]{problem}"
    return _wrong(strings, str, "a string")


def event_problem(event: object, choices: int) -> str | None:
    """What makes an upstream event something the proxy cannot read without losing or inventing
    text, or without allocating more than MAX_CHOICES choices and MAX_TOOL_CALLS tool calls
    each (None: nothing). `choices` is how many the request asked for. Text that is not a
    string is an error, never skipped."""
    if not isinstance(event, dict):
        return "it is not an object"
    listed = event.get("choices")
    if not isinstance(listed, (list, type(None))):
        return "choices is not a list"
    problems = ((i, _choice_problem(choice, choices)) for i, choice in enumerate(listed or []))
    in_choices = next((f"choices[{i}]{problem}" for i, problem in problems if problem), None)
    return in_choices or _wrong({"usage": event.get("usage")}, dict, "an object")


def events_of_answer(answer: Any) -> list[StreamChunk]:
    """A non-streamed completion (an upstream that ignored `stream: true`) as the stream it
    stands for: one chunk per choice holding its whole text, then its usage. ValueError if it
    is not a completion. The chunks are checked as they are read, as streamed ones are."""
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
        raise ValueError("it has no choices")
    # The answer's own `object` (chat.completion) is no chunk's.
    named = envelope(cast(StreamChunk, answer), ("id", "created", "model", "system_fingerprint"))
    events: list[StreamChunk] = []
    for choice in answer["choices"]:
        if not isinstance(choice, dict):
            raise ValueError("a choice is not an object")
        fields = ("index", "logprobs", "finish_reason")
        common = cast(StreamChoice, {key: choice.get(key) for key in fields})
        message = choice.get("message")
        if isinstance(message, dict):
            delta = dict(message)
            if isinstance(delta.get("tool_calls"), list):  # chunks number their tool calls
                delta["tool_calls"] = [
                    {"index": i, **call} if isinstance(call, dict) else call
                    for i, call in enumerate(delta["tool_calls"])
                ]
            event: StreamChunk = {
                "object": "chat.completion.chunk",
                "choices": [{**common, "delta": cast(Delta, delta)}],
            }
        else:
            event = {
                "object": "text_completion",
                "choices": [{**common, "text": choice.get("text")}],
            }
        events.append({**named, **event})
    if isinstance(answer.get("usage"), dict):
        events.append({**named, "choices": [], "usage": answer["usage"]})
    return events


class UpstreamStream:
    """One open upstream stream: `events()` yields its JSON events; `close()` ends the request
    (the upstream sees the connection close and stops generating). `done` tells whether the
    upstream ended it properly (`[DONE]`, or the last event of a JSON answer)."""

    def __init__(
        self,
        response: httpx.Response,
        metrics: ServeMetrics,
        choices: int,
        answer: list[StreamChunk] | None = None,
    ):
        self._response = response
        self._metrics = metrics
        self._choices = choices  # how many the request asked for: no event may name another
        self._answer = answer
        self.done = False

    async def events(self) -> AsyncIterator[tuple[StreamChunk, str]]:
        """Each event as (parsed, its JSON text as sent)."""
        if self._answer is not None:
            for event in self._answer:
                yield self._checked(event), json.dumps(event, separators=(",", ":"))
            self.done = True
            return
        try:
            async for line in self._lines():
                if not line.startswith("data:"):
                    continue  # blank separators, comments and `event:` lines
                data = line[5:].strip()
                if data == "[DONE]":
                    self.done = True
                    return
                try:
                    event = parse_json(data)
                except (ValueError, RecursionError):
                    raise _protocol_error(
                        self._metrics, "upstream sent an event that is not JSON"
                    ) from None
                yield self._checked(event), data
        except httpx.HTTPError as error:
            raise _failure(error, self._metrics, "in the middle of a stream") from None

    async def _lines(self) -> AsyncIterator[str]:
        """The stream's lines; an error once one runs past MAX_EVENT_BYTES unended (an upstream
        that never ends a line must not fill the proxy's memory)."""
        buffer = bytearray()
        async for piece in self._response.aiter_bytes():
            searched = len(buffer)
            buffer += piece
            ended = buffer.rfind(b"\n", searched) + 1
            for line in buffer[:ended].splitlines():
                yield line.decode(errors="replace")
            del buffer[:ended]
            if len(buffer) > MAX_EVENT_BYTES:
                message = f"upstream sent an event longer than {MAX_EVENT_BYTES} bytes"
                raise _protocol_error(self._metrics, message)
        yield buffer.decode(errors="replace")

    def _checked(self, event: object) -> StreamChunk:
        problem = event_problem(event, self._choices)
        if problem is not None:
            raise _protocol_error(self._metrics, f"upstream sent a malformed event: {problem}")
        return cast(StreamChunk, event)

    async def close(self) -> None:
        await self._response.aclose()


class Upstream:
    """An HTTP client of one OpenAI-compatible base URL."""

    def __init__(
        self,
        base_url: str,
        metrics: ServeMetrics,
        *,
        connect_timeout_s: float,
        read_timeout_s: float,
        api_key: str | None = None,
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        # No connection limit: every client stream holds one upstream connection.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
        url = httpx.URL(base_url)
        # Credentials in the URL go as basic auth, so no URL httpx logs carries them.
        auth = httpx.BasicAuth(url.username, url.password) if url.username else None
        self._client = httpx.AsyncClient(
            base_url=str(url.copy_with(userinfo=b"")).rstrip("/"),
            auth=auth,
            headers=headers,
            timeout=timeout,
            limits=limits,
        )
        self._metrics = metrics

    async def open(self, path: str, body: RequestBody) -> UpstreamStream:
        """POST `body` (with `stream: true`) and return the stream once its headers arrived."""
        started = time.perf_counter()
        response = await self._send("POST", path, {**body, "stream": True}, "opening the request")
        self._metrics.upstream_latency.observe(time.perf_counter() - started)
        streamed = response.headers.get("content-type", "").startswith("text/event-stream")
        choices = choice_count(body, path == CHAT_PATH)
        if response.status_code == 200 and streamed:
            return UpstreamStream(response, self._metrics, choices)
        content = await self._whole(response, "reading an answer")
        try:
            answer = events_of_answer(parse_json(content))
        except (ValueError, RecursionError) as error:
            message = (
                f"upstream answered a streaming request with a body that is no stream: {error}"
            )
            raise _protocol_error(self._metrics, message) from None
        return UpstreamStream(response, self._metrics, choices, answer)

    async def _send(self, method: str, path: str, body: object, stage: str) -> httpx.Response:
        """The response to a request, once its headers arrived (its body is read later)."""
        try:
            request = self._client.build_request(method, path, json=body)
            return await self._client.send(request, stream=True)
        except httpx.HTTPError as error:
            raise _failure(error, self._metrics, stage) from None

    async def _whole(self, response: httpx.Response, stage: str) -> bytes:
        """The whole body of an answer that is no stream, read no further than MAX_ANSWER_BYTES
        (an upstream must not fill the proxy's memory); the response is closed. A status other
        than 200 raises."""
        content = bytearray()
        try:
            async for piece in response.aiter_bytes():
                content += piece
                if len(content) > MAX_ANSWER_BYTES:
                    message = f"upstream answer longer than {MAX_ANSWER_BYTES} bytes ({stage})"
                    raise _protocol_error(self._metrics, message)
        except httpx.HTTPError as error:
            raise _failure(error, self._metrics, stage) from None
        finally:
            await response.aclose()
        if response.status_code != 200:
            raise _status_error(response, bytes(content), self._metrics)
        return bytes(content)

    async def _answer(self, method: str, path: str, body: object = None) -> bytes:
        """The body of a request whose answer is no stream; a status other than 200 raises."""
        stage = f"{method} {path}"
        return await self._whole(await self._send(method, path, body, stage), stage)

    async def models(self) -> Any:
        """The upstream's GET /v1/models answer."""
        content = await self._answer("GET", "/v1/models")
        try:
            return parse_json(content)
        except (ValueError, RecursionError):
            raise _protocol_error(
                self._metrics, "upstream /v1/models answered a body that is not JSON"
            ) from None

    async def token_ids(self, model: str | None, text: str) -> list[int]:
        """The upstream tokenizer's ids for `text` (vLLM's `/tokenize`; no special tokens)."""
        body = {"model": model, "prompt": text, "add_special_tokens": False}
        try:
            content = await self._answer("POST", "/tokenize", body)
        except UpstreamError as error:
            raise UpstreamError(502, f"upstream /tokenize: {error.message}") from None
        try:
            tokens = parse_json(content)["tokens"]
            if not isinstance(tokens, list) or any(_not_int(token) for token in tokens):
                raise TypeError
        except (ValueError, RecursionError, TypeError, KeyError):
            raise _protocol_error(
                self._metrics, "upstream /tokenize answered without a token list"
            ) from None
        return list(tokens)

    async def close(self) -> None:
        await self._client.aclose()
