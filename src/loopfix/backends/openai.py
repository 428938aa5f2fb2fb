"""The `Backend` over any OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama).

Each request is streamed (`stream: true`) on a thread pool whose size is the concurrency limit.
Steps per request:
1. Build the body: the prompt (completions) or the chat (chat completions), the decode
   settings, the request's seed and stop texts, `chat_template_kwargs.enable_thinking` when
   asked, and vLLM's `return_token_ids` so records carry the model's token ids.
2. POST with retries: 429, 5xx and connection failures back off exponentially (honouring
   `Retry-After`); other 4xx fail that request only (its record says why).
3. Read the server-sent events: text, `reasoning_content`, token ids, finish reason (or the
   one JSON completion of a server that ignored `stream`). A reply that is not the OpenAI shape
   (another content type, no choice at all) stops the scan with a `BackendError`. vLLM's
   `stop_reason` says which stop text ended a reply; other servers do not say.
Finish reasons map as: `length` -> cut, `repetition` (vLLM's detector) -> loop, else stop.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx

from loopfix.backends.base import BackendError, ClosedOnExit, Generation, Request
from loopfix.backends.identity import ModelFile, ModelIdentity
from loopfix.records import DecodeSettings, FinishReason

__all__ = ["OpenAIBackend", "RequestBody", "request_body"]

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_FINISH: dict[str | None, FinishReason] = {
    "length": "length",
    "repetition": "repetition",
    "stop": "stop",
    None: "stop",
}


class _StreamOptions(TypedDict):
    include_usage: bool


class _ChatTemplateKwargs(TypedDict):
    enable_thinking: bool


class _Body(TypedDict):
    model: str
    stream: bool
    max_tokens: int
    temperature: float
    top_p: float
    presence_penalty: float
    frequency_penalty: float
    seed: int
    return_token_ids: bool
    stream_options: _StreamOptions


class RequestBody(_Body, total=False):
    """The JSON body of one streamed (chat) completion request."""

    top_k: int
    min_p: float
    repetition_penalty: float
    stop: list[str]
    messages: list[dict[str, str]]
    chat_template_kwargs: _ChatTemplateKwargs
    prompt: list[int] | str | None


def request_body(
    request: Request, settings: DecodeSettings, model: str, api: str, think: bool | None
) -> RequestBody:
    body: RequestBody = {
        "model": model,
        "stream": True,
        "max_tokens": settings.max_new_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "presence_penalty": settings.presence_penalty,
        "frequency_penalty": settings.frequency_penalty,
        "seed": request.seed,
        "return_token_ids": True,  # vLLM extension; servers without it ignore the field
        # The final event then carries `usage`: a length for servers that return no ids.
        "stream_options": {"include_usage": True},
    }
    # Extensions outside the OpenAI schema are only sent when they change something.
    if settings.top_k:
        body["top_k"] = settings.top_k
    if settings.min_p:
        body["min_p"] = settings.min_p
    if settings.repetition_penalty != 1.0:
        body["repetition_penalty"] = settings.repetition_penalty
    if request.stop:
        body["stop"] = list(request.stop)
    if api == "chat":
        messages = request.messages or [{"role": "user", "content": request.text or ""}]
        body["messages"] = messages
        if think is not None:
            body["chat_template_kwargs"] = {"enable_thinking": think}
    else:
        if request.messages is not None:
            raise BackendError("a chat (messages) item needs --api chat, not completions")
        body["prompt"] = request.ids if request.ids is not None else request.text
    return body


@dataclass
class _Stream:
    """What the events of one streamed reply add up to."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    finish: str | None = None
    completion_tokens: int | None = None
    stop: str | None = None
    events: int = 0  # choice events read: a reply with none is not an answer

    def add(self, event: dict[str, Any]) -> None:
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.completion_tokens = usage["completion_tokens"]
        choices = event.get("choices")
        if not isinstance(choices, list):
            raise ValueError(f"event without a 'choices' list: {json.dumps(event)[:200]}")
        for choice in choices:
            self.events += 1
            # A non-streamed answer (a server that ignored `stream`) holds a `message`.
            delta = choice.get("delta") or choice.get("message") or {}
            piece = choice.get("text") if "text" in choice else delta.get("content")
            self.text.append(piece or "")
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            self.reasoning.append(reasoning or "")
            self.tokens.extend(int(t) for t in choice.get("token_ids") or [])
            self.finish = choice.get("finish_reason") or self.finish
            # vLLM's extension: the stop text that ended the reply (an id for a stop token).
            if isinstance(choice.get("stop_reason"), str):
                self.stop = choice["stop_reason"]

    def generation(self) -> Generation:
        reasoning = "".join(self.reasoning)
        return Generation(
            tokens=self.tokens,
            finish_reason=_FINISH.get(self.finish, "stop"),
            text="".join(self.text),
            reasoning=reasoning or None,
            token_count=None if self.tokens else self.completion_tokens,
            stop=self.stop,
        )


def _read_reply(response: httpx.Response, path: str) -> _Stream:
    """The events of a 200 reply: server-sent events, or one JSON completion from a server that
    ignored `stream`. Anything else (an HTML page, a JSON body that is no completion, a stream
    without a choice) is a `BackendError` naming what came: never a sample with empty text."""
    kind = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    lines: Iterable[str]
    if kind == "application/json":
        lines = ["data:" + response.read().decode("utf-8", "replace")]
    elif kind == "text/event-stream":
        lines = response.iter_lines()
    else:
        raise BackendError(
            f"{path} answered {kind}, not an OpenAI stream (text/event-stream) or JSON: "
            "is the URL an OpenAI-compatible server?"
        )
    stream = _Stream()
    for line in lines:
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        try:
            stream.add(json.loads(line.removeprefix("data:")))
        except (ValueError, TypeError, AttributeError) as error:
            raise BackendError(f"malformed reply from {path}: {error}: {line[:200]!r}") from error
    if not stream.events:
        raise BackendError(f"{path} answered {kind} without any completion choice")
    return stream


class OpenAIBackend(ClosedOnExit):
    """Stream completions from an OpenAI-compatible server with bounded concurrency."""

    name = "openai"
    tokenizer: Any = None  # the server tokenizes
    context_length: int | None = None  # the server rejects what does not fit; the record says so
    generation_cap: int | None = None  # nor does it say its model's own cap
    dtype: str | None = None  # an OpenAI-compatible server does not say

    def __init__(
        self,
        base_url: str,
        model_name: str | None = None,
        api: str = "chat",
        concurrency: int = 8,
        batch_size: int = 16,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 600.0,
        think: bool | None = None,
        retries: int = 5,
        backoff: float = 0.5,
    ) -> None:
        root = base_url.rstrip("/")
        self.base_url = root if root.endswith("/v1") else root + "/v1"
        self.api, self.think, self.retries, self.backoff = api, think, retries, backoff
        self.batch_size, self.concurrency = batch_size, concurrency
        key = os.environ.get(api_key_env)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=concurrency),
        )
        # Asked once up front, without a long retry: a wrong URL should fail in a second, before
        # the scan touches its store.
        served = self._served_model()
        self.model_name = model_name or served

    def _send(
        self, method: str, path: str, retries: int | None = None, **options: Any
    ) -> httpx.Response:
        """One request with retries; the response is returned open (streamed) on success."""
        url = self.base_url + path
        retries = self.retries if retries is None else retries
        for attempt in range(retries + 1):
            try:
                response = self.client.send(
                    self.client.build_request(method, url, **options), stream=True
                )
            except httpx.TransportError as error:
                if attempt == retries:
                    raise BackendError(f"cannot reach {url}: {error}") from error
                time.sleep(self.backoff * 2**attempt)
                continue
            if response.status_code not in _RETRY_STATUS or attempt == retries:
                return response
            delay = response.headers.get("retry-after")
            response.close()
            time.sleep(float(delay) if delay and delay.isdigit() else self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def _served_model(self) -> str:
        response = self._send("GET", "/models", retries=1)
        try:
            response.read()
            return str(response.json()["data"][0]["id"])
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise BackendError(
                f"{self.base_url}/models did not list a model ({response.status_code}); "
                "pass --model-name"
            ) from error
        finally:
            response.close()

    def _complete(self, request: Request, settings: DecodeSettings) -> Generation:
        body = request_body(request, settings, self.model_name, self.api, self.think)
        path = "/chat/completions" if self.api == "chat" else "/completions"
        response = self._send("POST", path, json=body)
        try:
            if response.status_code >= 400:
                response.read()
                if response.status_code in _RETRY_STATUS:
                    raise BackendError(f"{path}: still {response.status_code} after retries")
                return Generation(
                    [],
                    "error",
                    text="",
                    error=f"HTTP {response.status_code}: {response.text[:500]}",
                )
            return _read_reply(response, path).generation()
        finally:
            response.close()

    def generate(
        self, requests: Sequence[Request], settings: DecodeSettings
    ) -> Iterator[tuple[int, Generation]]:
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="loopfix-openai")
        running: dict[Future[Generation], int] = {}
        try:
            for index, request in enumerate(requests):
                running[pool.submit(self._complete, request, settings)] = index
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield running.pop(future), future.result()
        finally:
            # On an error or Ctrl-C, drop what has not started and do not wait for the rest.
            pool.shutdown(wait=False, cancel_futures=True)

    def identity(self, known: Mapping[str, ModelFile] | None = None) -> ModelIdentity:
        """No files here: a served model is known by its URL (in the scan's settings) only."""
        return ModelIdentity(None)

    def close(self) -> None:
        self.client.close()
