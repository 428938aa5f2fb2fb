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
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TypeVar, cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loopfix.agents import AgentVerdict
from loopfix.serve import agent_check
from loopfix.serve.assemble import assemble
from loopfix.serve.choice import Policy
from loopfix.serve.config import RequestOptions, ServeConfig
from loopfix.serve.exchange import Exchange
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import (
    CHAT_PATH,
    MAX_CHOICES,
    RequestBody,
    StreamChunk,
    choice_count,
    error_body,
)
from loopfix.serve.upstream import Upstream, UpstreamError, parse_json

log = logging.getLogger("loopfix.serve")
COMPLETIONS_PATH = "/v1/completions"
MODELS_PATH = "/v1/models"
T = TypeVar("T")
CLIENT_GONE = 499  # nginx's "client closed request": counted, never sent
COUNTED_ROUTES = {("POST", CHAT_PATH), ("POST", COMPLETIONS_PATH), ("GET", MODELS_PATH)}
PROXY_FAILED = "the proxy failed on this request"


def error_response(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, kind, code), status_code=status)


def _secret(variable: str | None, flag: str) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise ValueError(f"{flag}: environment variable {variable} is not set")
    return value


def _policy(config: ServeConfig, options: RequestOptions) -> Policy:
    hold = config.holdback_tokens if options.holdback_tokens is None else options.holdback_tokens
    return Policy(options.action or config.action, options.max_rescues or config.max_rescues, hold)


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
    conversations = agent_check.Conversations(config.agent_memory_chars)
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
    app.add_middleware(_Outcomes, metrics=metrics, action=config.action)
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

    @app.exception_handler(UpstreamError)
    async def upstream_failed(request: Request, error: UpstreamError) -> JSONResponse:
        request.state.outcome.error = error.message
        return JSONResponse(error.body(), status_code=error.status, headers=error.headers)

    @app.get(MODELS_PATH)
    async def models(request: Request) -> Response:
        return unauthorized(request) or JSONResponse(await upstream.models())

    async def proxy(request: Request) -> Response:
        path, outcome = request.scope["path"], request.state.outcome
        denied = unauthorized(request)
        if denied is not None:
            return denied
        raw = await _read_body(request, config.max_body_bytes)
        if raw is None:
            message = f"the request body is larger than {config.max_body_bytes} bytes"
            return error_response(413, message, "invalid_request_error", "request_too_large")
        try:
            body, policy, options = _parse(raw, config, path)
        except ValueError as error:
            return error_response(400, str(error), "invalid_request_error")
        outcome.action = policy.action
        agent_action = options.agent_action or config.agent_action
        headers: dict[str, str] = {}
        verdict = None
        if path == CHAT_PATH and agent_action != "off":
            verdict = agent_check.stuck_agent(
                body.get("messages"), config.agent, conversations, options.conversation
            )
        if verdict is not None:
            metrics.agent_loops.labels(verdict.kind, agent_action, "history").inc()
            headers[agent_check.HEADER] = agent_check.header_value(verdict)
            if agent_action == "stop":
                return _stopped(body, verdict, headers)
            if agent_action == "nudge":
                body["messages"] = [*body["messages"], agent_check.nudge_message(verdict)]
        exchange = Exchange(path, body, policy, config, upstream, metrics, agent_action)
        outcome.exchange = exchange
        return await _answer(request, exchange, outcome, headers)

    for path in (CHAT_PATH, COMPLETIONS_PATH):
        app.add_api_route(path, proxy, methods=["POST"])
    return app


@dataclass
class Outcome:
    """How one answer of a counted route ended: its handler fills it in, `_Outcomes` counts it."""

    action: str
    status: int | None = None  # None: the status its response started with
    exchange: Exchange | None = None
    error: str | None = None  # an upstream error's message, logged


class _Outcomes:
    """ASGI middleware, the one place where an answer of the proxied routes is counted in
    `loopfix_requests_total` (and logged, and its upstream request closed), once it is over:
    a stream only when it ended. The status is the one the answer carried: a stream's error
    event's, 499 for a client gone first (ClientDisconnect), 500 for a bug of the proxy (which
    gets an OpenAI error here if nothing was sent yet)."""

    def __init__(self, app: ASGIApp, metrics: ServeMetrics, action: str):
        self.app, self.metrics, self.action = app, metrics, action

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) not in COUNTED_ROUTES:
            await self.app(scope, receive, send)
            return
        outcome = scope.setdefault("state", {})["outcome"] = Outcome(self.action)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and outcome.status is None:
                outcome.status = message["status"]
            await send(message)

        self.metrics.active_streams.inc()
        try:
            await self.app(scope, receive, sending)
        except ClientDisconnect:
            outcome.status = CLIENT_GONE  # nothing is sent: nobody would read it
        except Exception:
            log.exception("%s action=%s failed", scope["path"], outcome.action)
            if outcome.status is None:
                await error_response(500, PROXY_FAILED, "server_error")(scope, receive, sending)
            outcome.status = 500
        finally:
            self.metrics.active_streams.dec()
            if outcome.exchange is not None:
                await outcome.exchange.close()
            self.metrics.requests.labels(scope["path"], outcome.action, str(outcome.status)).inc()
            _log(scope["path"], outcome)


def _log(path: str, outcome: Outcome) -> None:
    """One line per generation request or upstream error: never a key, a body or a prompt."""
    choices = outcome.exchange.choices if outcome.exchange else []
    stopped = sum(1 for choice in choices if choice.finish_reason == "repetition")
    said = f"{path} action={outcome.action} status={outcome.status}"
    if outcome.error is not None:
        log.warning("%s upstream error: %s", said, outcome.error)
    elif outcome.exchange is not None:
        log.info("%s choices=%d stopped=%d", said, len(choices), stopped)


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


def _parse(
    raw: bytes, config: ServeConfig, path: str
) -> tuple[RequestBody, Policy, RequestOptions]:
    """The body without its `loopfix` field, the policy and that field; ValueError if bad."""
    try:
        body = parse_json(raw)
    except ValueError as error:
        raise ValueError(f"the request body is not JSON: {error}") from None
    except RecursionError:
        raise ValueError("the request body is nested too deeply") from None
    if not isinstance(body, dict):
        raise ValueError("the request body must be a JSON object")
    n = body.get("n")
    # The proxy counts choices by `n`; the upstream checks every other field itself.
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n: must be a positive integer, got {json.dumps(n)[:40]}")
    choices = choice_count(cast(RequestBody, body), path == CHAT_PATH)
    if choices > MAX_CHOICES:
        raise ValueError(f"n: at most {MAX_CHOICES} choices (n x prompts), got {choices}")
    try:
        options = RequestOptions.model_validate(body.pop("loopfix", None) or {})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in ("loopfix", *first["loc"]))
        raise ValueError(f"{field}: {first['msg']}") from None
    # The proxy reads only the fields RequestBody names; the upstream checks them all.
    return cast(RequestBody, body), _policy(config, options), options


def _stopped(body: RequestBody, verdict: AgentVerdict, headers: dict[str, str]) -> Response:
    """The proxy's own answer to a stuck agent under `agent_action: stop`."""
    if body.get("stream"):
        events = agent_check.stopped_events(dict(body), verdict)
        return StreamingResponse(iter(events), media_type="text/event-stream", headers=headers)
    return JSONResponse(agent_check.stopped_answer(dict(body), verdict), headers=headers)


async def _answer(
    request: Request, exchange: Exchange, outcome: Outcome, headers: dict[str, str]
) -> Response:
    """Open the upstream request and answer: a stream of events, or one assembled JSON."""
    if exchange.body.get("stream"):
        await _unless_gone(request, exchange.open())
        events = _events(exchange, outcome)
        return StreamingResponse(events, media_type="text/event-stream", headers=headers)
    # The assembled answer reports usage as a non-streamed one does.
    exchange.body["stream_options"] = {"include_usage": True}
    chunks = await _unless_gone(request, _collect(exchange))
    if exchange.answer_loop is not None and agent_check.HEADER not in headers:
        headers[agent_check.HEADER] = agent_check.header_value(exchange.answer_loop)
    return JSONResponse(assemble(chunks, exchange.chat), headers=headers)


async def _collect(exchange: Exchange) -> list[StreamChunk]:
    await exchange.open()
    return [chunk async for chunk, _ in exchange.chunks()]


async def _unless_gone(request: Request, work: Awaitable[T]) -> T:
    """`work`'s result; ClientDisconnect once the client hung up first, even if `work` ended in
    the same step (nobody reads its answer). `work` is then cancelled, which closes its upstream
    request, also one still waiting for the upstream's headers."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        hung_up = gone.done()
    finally:
        gone.cancel()  # a no-op once it returned
        task.cancel()  # a no-op once it ended
    if hung_up:
        with suppress(asyncio.CancelledError, Exception):
            await task  # let the cancellation unwind it: its upstream stream closes
        raise ClientDisconnect
    return task.result()


async def _disconnected(request: Request) -> None:
    """Returns once the client hung up: with the body read, the server's next message is the
    disconnect."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _events(exchange: Exchange, outcome: Outcome) -> AsyncIterator[str]:
    """The SSE body; a failure mid-stream becomes a final `error` event carrying its status,
    which is the status counted."""
    try:
        async for _, text in exchange.chunks():
            yield f"data: {text}\n\n"
    except UpstreamError as error:
        outcome.status, outcome.error = error.status, error.message
        yield f"data: {json.dumps(error.body())}\n\n"
    except (asyncio.CancelledError, GeneratorExit):
        outcome.status = CLIENT_GONE
        raise
    except Exception:  # a bug of the proxy: the client still learns the answer is incomplete
        log.exception("%s action=%s failed mid-stream", exchange.path, exchange.policy.action)
        outcome.status = 500
        yield f"data: {json.dumps(error_body(PROXY_FAILED, 'server_error'))}\n\n"
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
