"""`Upstream`: the proxy's client of the OpenAI-compatible server behind it.

Every generation request goes upstream as a stream (`stream: true`), also for clients that did
not ask for one: the proxy must see tokens as they come to stop a loop early. Failures become
`UpstreamError`s carrying the HTTP status the proxy answers with: 502 when the upstream cannot be
reached or answers garbage, 504 when it times out, the upstream's own status (and message) when
it answers with an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from loopfix.serve.metrics import ServeMetrics


class UpstreamError(Exception):
    """A failed upstream exchange, with the status and OpenAI-style body to answer with."""

    def __init__(self, status: int, message: str, kind: str = "upstream_error"):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": None, "code": None}}


def _upstream_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return f"upstream answered HTTP {response.status_code}"


class UpstreamStream:
    """One open upstream stream: `events()` yields its JSON events; `close()` ends the request
    (the upstream sees the connection close and stops generating)."""

    def __init__(self, response: httpx.Response, metrics: ServeMetrics):
        self._response = response
        self._metrics = metrics

    async def events(self) -> AsyncIterator[tuple[dict[str, Any], str]]:
        """Each event as (parsed, its JSON text as sent)."""
        try:
            async for line in self._response.aiter_lines():
                if not line.startswith("data:"):
                    continue  # blank separators, comments and `event:` lines
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except json.JSONDecodeError:
                    self._metrics.upstream_errors.labels("protocol").inc()
                    raise UpstreamError(502, "upstream sent an event that is not JSON") from None
                if not isinstance(event, dict):
                    self._metrics.upstream_errors.labels("protocol").inc()
                    raise UpstreamError(502, "upstream sent an event that is not an object")
                yield event, data
        except httpx.TimeoutException:
            self._metrics.upstream_errors.labels("timeout").inc()
            raise UpstreamError(504, "upstream timed out in the middle of a stream") from None
        except httpx.TransportError as error:
            self._metrics.upstream_errors.labels("connect").inc()
            raise UpstreamError(502, f"upstream stream broke: {type(error).__name__}") from None

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
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, limits=limits
        )
        self._metrics = metrics

    async def open(self, path: str, body: dict[str, Any]) -> UpstreamStream:
        """POST `body` (with `stream: true`) and return the stream once its headers arrived."""
        request = self._client.build_request("POST", path, json={**body, "stream": True})
        started = time.perf_counter()
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException:
            self._metrics.upstream_errors.labels("timeout").inc()
            raise UpstreamError(504, "upstream timed out") from None
        except httpx.TransportError as error:
            self._metrics.upstream_errors.labels("connect").inc()
            raise UpstreamError(502, f"upstream unreachable: {type(error).__name__}") from None
        self._metrics.upstream_latency.observe(time.perf_counter() - started)
        if response.status_code != 200:
            try:
                await response.aread()
            finally:
                await response.aclose()
            self._metrics.upstream_errors.labels("status").inc()
            raise UpstreamError(response.status_code, _upstream_message(response))
        return UpstreamStream(response, self._metrics)

    async def models(self) -> Any:
        """The upstream's GET /v1/models answer."""
        try:
            response = await self._client.get("/v1/models")
        except httpx.TimeoutException:
            raise UpstreamError(504, "upstream timed out") from None
        except httpx.TransportError as error:
            raise UpstreamError(502, f"upstream unreachable: {type(error).__name__}") from None
        if response.status_code != 200:
            raise UpstreamError(response.status_code, _upstream_message(response))
        return response.json()

    async def token_ids(self, model: Any, text: str) -> list[int]:
        """The upstream tokenizer's ids for `text` (vLLM's `/tokenize`; no special tokens)."""
        body = {"model": model, "prompt": text, "add_special_tokens": False}
        try:
            response = await self._client.post("/tokenize", json=body)
        except httpx.HTTPError as error:
            raise UpstreamError(502, f"upstream /tokenize failed: {type(error).__name__}") from None
        if response.status_code != 200:
            raise UpstreamError(502, f"upstream /tokenize: {_upstream_message(response)}")
        tokens = response.json().get("tokens")
        if not isinstance(tokens, list):
            raise UpstreamError(502, "upstream /tokenize answered without a token list")
        return [int(token) for token in tokens]

    async def close(self) -> None:
        await self._client.aclose()
