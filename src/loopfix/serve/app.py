"""`create_app`: the proxy as an ASGI app (FastAPI), and `run` to serve it with uvicorn.

Routes: POST /v1/chat/completions and /v1/completions (watched), GET /v1/models (forwarded),
GET /metrics (Prometheus text), GET /healthz. Errors are OpenAI-shaped JSON: 400 for a body that
is not a JSON object or a bad `loopfix` field, 401 without the key, 404 for unknown routes,
502/504 when the upstream is down or times out. Logs name the route, action, status and loops
only: never a key or a body.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException

from loopfix.serve.assemble import assemble
from loopfix.serve.config import RequestOptions, ServeConfig
from loopfix.serve.exchange import CHAT_PATH, Exchange, Policy
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.upstream import Upstream, UpstreamError

log = logging.getLogger("loopfix.serve")
COMPLETIONS_PATH = "/v1/completions"


def error_response(status: int, message: str, kind: str) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status)


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

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        denied = unauthorized(request)
        if denied is not None:
            return denied
        try:
            return JSONResponse(await upstream.models())
        except UpstreamError as error:
            return JSONResponse(error.body(), status_code=error.status)

    async def proxy(request: Request, path: str) -> Response:
        denied = unauthorized(request)
        if denied is not None:
            metrics.requests.labels(path, config.action, "401").inc()
            return denied
        try:
            body, policy = _parse(await request.body(), config)
        except ValueError as error:
            metrics.requests.labels(path, config.action, "400").inc()
            return error_response(400, str(error), "invalid_request_error")
        streaming = bool(body.get("stream"))
        if not streaming:  # the assembled response reports usage like a non-streamed one
            body["stream_options"] = {"include_usage": True}
        exchange = Exchange(path, body, policy, config, upstream, metrics)
        try:
            await exchange.open()
        except UpstreamError as error:
            return _failed(metrics, path, policy, error)
        if streaming:
            # The background close covers a client gone before the body started.
            return StreamingResponse(
                _events(exchange, metrics, path),
                media_type="text/event-stream",
                background=BackgroundTask(exchange.close),
            )
        metrics.active_streams.inc()
        try:
            chunks = [chunk async for chunk, _ in exchange.chunks()]
        except UpstreamError as error:
            return _failed(metrics, path, policy, error)
        finally:
            metrics.active_streams.dec()
        _log_done(exchange, "200")
        metrics.requests.labels(path, policy.action, "200").inc()
        return JSONResponse(assemble(chunks, exchange.chat))

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        return await proxy(request, CHAT_PATH)

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        return await proxy(request, COMPLETIONS_PATH)

    return app


def _parse(raw: bytes, config: ServeConfig) -> tuple[dict[str, Any], Policy]:
    """The body without its `loopfix` field, and the policy it asks for; ValueError if bad."""
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"the request body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    try:
        options = RequestOptions.model_validate(body.pop("loopfix", None) or {})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in ("loopfix", *first["loc"]))
        raise ValueError(f"{field}: {first['msg']}") from None
    return body, _policy(config, options)


def _failed(metrics: ServeMetrics, path: str, policy: Policy, error: UpstreamError) -> JSONResponse:
    metrics.requests.labels(path, policy.action, str(error.status)).inc()
    log.warning(
        "%s action=%s upstream error %d: %s", path, policy.action, error.status, error.message
    )
    return JSONResponse(error.body(), status_code=error.status)


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


async def _events(exchange: Exchange, metrics: ServeMetrics, path: str) -> AsyncIterator[str]:
    """The SSE body; an upstream failure mid-stream becomes a final `error` event."""
    metrics.active_streams.inc()
    status = "200"
    try:
        async for _, text in exchange.chunks():
            yield f"data: {text}\n\n"
    except UpstreamError as error:
        status = str(error.status)
        yield f"data: {json.dumps(error.body())}\n\n"
    finally:
        metrics.active_streams.dec()
        metrics.requests.labels(path, exchange.policy.action, status).inc()
        _log_done(exchange, status)
    yield "data: [DONE]\n\n"


def run(config: ServeConfig) -> None:
    """Serve the proxy with uvicorn until interrupted."""
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    uvicorn.run(create_app(config), host=config.host, port=config.port, log_level="info")
