"""`create_app`: the proxy as an ASGI app (FastAPI), and `run` to serve it with uvicorn.

Routes: POST /v1/chat/completions and /v1/completions (watched), GET /v1/models (forwarded),
GET /metrics (Prometheus text), GET /healthz. Errors are OpenAI-shaped JSON: 400 for a body that
is not a JSON object or has a bad field, 401 without the key, 404 for unknown routes, 413 for a
body over `max_body_bytes`, 502/504 when the upstream is down, answers junk or times out, 500
for a bug of the proxy. Every answer of the proxied routes is counted in
`loopfix_requests_total` with the status it carried (a stream's error event: that error's
status; a client that hung up first: 499). Logs name the route, action, status and loops only:
never a key, a body or a query string (dropped on arrival: no route reads one).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from loopfix.serve.assemble import assemble
from loopfix.serve.config import RequestOptions, ServeConfig
from loopfix.serve.exchange import CHAT_PATH, Exchange, Policy
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import RequestBody, StreamChunk, error_body
from loopfix.serve.upstream import Upstream, UpstreamError

log = logging.getLogger("loopfix.serve")
COMPLETIONS_PATH = "/v1/completions"
MODELS_PATH = "/v1/models"
CLIENT_GONE = 499  # nginx's "client closed request": counted, never sent


PROXY_FAILED = "the proxy failed on this request"


def error_response(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, kind, code), status_code=status)


def _upstream_error_response(error: UpstreamError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def _secret(variable: str | None, flag: str) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ValueError(f"{flag}: environment variable {variable} is not set")
    return value


def _policy(config: ServeConfig, options: RequestOptions) -> Policy:
    return Policy(
        action=options.action or config.action,
        max_rescues=options.max_rescues or config.max_rescues,
        holdback_tokens=(
            config.holdback_tokens if options.holdback_tokens is None else options.holdback_tokens
        ),
    )


class _DropQueryString:
    """ASGI middleware that empties the query string before anything sees it: no route reads
    one, and a key put there would otherwise reach the access log."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope["query_string"] = b""  # the server's access log reads this same scope
        await self.app(scope, receive, send)


def create_app(config: ServeConfig) -> FastAPI:
    """The proxy app for `config`; raises ValueError when a key variable it names is unset."""
    api_key = _secret(config.api_key_env, "api_key_env")
    upstream_key = _secret(config.upstream_api_key_env, "upstream_api_key_env")
    metrics = ServeMetrics()
    upstream = Upstream(
        config.upstream,
        metrics,
        connect_timeout_s=config.connect_timeout_s,
        read_timeout_s=config.read_timeout_s,
        api_key=upstream_key,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await upstream.close()

    app = FastAPI(
        title="loopfix serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.add_middleware(_DropQueryString)
    app.state.metrics = metrics
    app.state.config = config

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> JSONResponse:
        kind = "not_found_error" if error.status_code == 404 else "invalid_request_error"
        return error_response(error.status_code, str(error.detail), kind)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics_text() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    def unauthorized(request: Request) -> JSONResponse | None:
        if api_key is None:
            return None
        given = request.headers.get("authorization", "")
        if secrets.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            return None
        return error_response(401, "missing or wrong API key", "authentication_error")

    def counted(path: str, action: str, response: Response) -> Response:
        metrics.requests.labels(path, action, str(response.status_code)).inc()
        return response

    @app.get(MODELS_PATH)
    async def models(request: Request) -> Response:
        denied = unauthorized(request)
        if denied is not None:
            return counted(MODELS_PATH, config.action, denied)
        try:
            answer: Response = JSONResponse(await upstream.models())
        except UpstreamError as error:
            answer = _upstream_error_response(error)
        return counted(MODELS_PATH, config.action, answer)

    async def proxy(request: Request, path: str) -> Response:
        denied = unauthorized(request)
        if denied is not None:
            return counted(path, config.action, denied)
        raw = await _read_body(request, config.max_body_bytes)
        if raw is None:
            message = f"the request body is larger than {config.max_body_bytes} bytes"
            too_large = error_response(413, message, "invalid_request_error", "request_too_large")
            return counted(path, config.action, too_large)
        try:
            body, policy = _parse(raw, config)
        except ValueError as error:
            bad = error_response(400, str(error), "invalid_request_error")
            return counted(path, config.action, bad)
        exchange = Exchange(path, body, policy, config, upstream, metrics)
        try:
            return await _answer(request, exchange)
        except Exception:  # a bug of the proxy still gets an OpenAI error, and is counted
            log.exception("%s action=%s failed", path, policy.action)
            await exchange.close()
            failed = error_response(500, PROXY_FAILED, "server_error")
            return counted(path, policy.action, failed)

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        return await proxy(request, CHAT_PATH)

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        return await proxy(request, COMPLETIONS_PATH)

    return app


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None once it is larger than `limit` bytes (read no further)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    pieces, size = [], 0
    async for piece in request.stream():
        size += len(piece)
        if size > limit:
            return None
        pieces.append(piece)
    return b"".join(pieces)


def _parse(raw: bytes, config: ServeConfig) -> tuple[RequestBody, Policy]:
    """The body without its `loopfix` field, and the policy it asks for; ValueError if bad."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"the request body is not JSON: {error}") from None
    except RecursionError:
        raise ValueError("the request body is nested too deeply") from None
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    n = body.get("n")
    # The proxy counts choices by `n`; the upstream checks every other field itself.
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n: must be a positive integer, got {json.dumps(n)[:40]}")
    try:
        options = RequestOptions.model_validate(body.pop("loopfix", None) or {})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in ("loopfix", *first["loc"]))
        raise ValueError(f"{field}: {first['msg']}") from None
    # The proxy reads only the fields RequestBody names; the upstream checks them all.
    return cast(RequestBody, body), _policy(config, options)


async def _answer(request: Request, exchange: Exchange) -> Response:
    """Open the upstream request and answer: a stream of events, or one assembled JSON."""
    path, metrics = exchange.path, exchange.metrics
    streaming = bool(exchange.body.get("stream"))
    if not streaming:  # the assembled response reports usage like a non-streamed one
        exchange.body["stream_options"] = {"include_usage": True}
    try:
        await exchange.open()
    except UpstreamError as error:
        return _failed(exchange, error)
    if streaming:
        # The background close covers a client gone before the body started.
        return StreamingResponse(
            _events(exchange),
            media_type="text/event-stream",
            background=BackgroundTask(exchange.close),
        )
    metrics.active_streams.inc()
    try:
        chunks = await _collect(request, exchange)
    except UpstreamError as error:
        return _failed(exchange, error)
    finally:
        metrics.active_streams.dec()
    status = 200 if chunks is not None else CLIENT_GONE
    _log_done(exchange, str(status))
    metrics.requests.labels(path, exchange.policy.action, str(status)).inc()
    if chunks is None:
        return Response(status_code=status)  # nobody reads it
    return JSONResponse(assemble(chunks, exchange.chat))


async def _collect(request: Request, exchange: Exchange) -> list[StreamChunk] | None:
    """Every chunk of a non-streamed answer; None when the client hung up first, and then the
    upstream request is closed at once (nobody would read what it goes on generating)."""

    async def chunks() -> list[StreamChunk]:
        return [chunk async for chunk, _ in exchange.chunks()]

    collect = asyncio.ensure_future(chunks())
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({collect, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (collect, gone):
            task.cancel()  # a no-op on a finished task
    if collect in done:
        return collect.result()
    with suppress(asyncio.CancelledError):
        await collect  # its upstream stream closes as the cancellation unwinds it
    await exchange.close()
    return None


async def _disconnected(request: Request) -> None:
    """Returns once the client hung up: with the body read, the server's next message is the
    disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _failed(exchange: Exchange, error: UpstreamError) -> JSONResponse:
    action = exchange.policy.action
    exchange.metrics.requests.labels(exchange.path, action, str(error.status)).inc()
    log.warning(
        "%s action=%s upstream error %d: %s", exchange.path, action, error.status, error.message
    )
    return _upstream_error_response(error)


def _log_done(exchange: Exchange, status: str) -> None:
    loops = sum(1 for state in exchange.choices.values() if state.finish_reason == "repetition")
    log.info(
        "%s action=%s status=%s choices=%d stopped=%d",
        exchange.path,
        exchange.policy.action,
        status,
        len(exchange.choices),
        loops,
    )


async def _events(exchange: Exchange) -> AsyncIterator[str]:
    """The SSE body; a failure mid-stream becomes a final `error` event carrying its status,
    which is the status counted."""
    metrics = exchange.metrics
    metrics.active_streams.inc()
    status = "200"
    try:
        async for _, text in exchange.chunks():
            yield f"data: {text}\n\n"
    except UpstreamError as error:
        status = str(error.status)
        yield f"data: {json.dumps(error.body())}\n\n"
    except (asyncio.CancelledError, GeneratorExit):
        status = str(CLIENT_GONE)
        raise
    except Exception:  # a bug of the proxy: the client still learns the answer is incomplete
        log.exception("%s action=%s failed mid-stream", exchange.path, exchange.policy.action)
        status = "500"
        yield f"data: {json.dumps(error_body(PROXY_FAILED, 'server_error'))}\n\n"
    finally:
        metrics.active_streams.dec()
        metrics.requests.labels(exchange.path, exchange.policy.action, status).inc()
        _log_done(exchange, status)
    yield "data: [DONE]\n\n"


def check_listen(host: str, port: int) -> None:
    """ValueError (one line naming host and port) when the proxy cannot listen there: checked
    before uvicorn starts, whose own failure is a traceback-like report and exit 3."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValueError(f"cannot listen on host {host} port {port}: {reason}") from None


def run(config: ServeConfig) -> None:
    """Serve the proxy with uvicorn until interrupted; ValueError (before anything starts) when
    the app cannot be built or the address cannot be listened on."""
    import uvicorn

    app = create_app(config)
    check_listen(config.host, config.port)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    uvicorn.run(app, host=config.host, port=config.port, log_level="info")
