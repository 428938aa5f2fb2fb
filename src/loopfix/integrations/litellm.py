"""`LoopfixGuardrail`: a LiteLLM proxy guardrail that watches chat completions for loops with the
same watch as `loopfix serve` (docs/integrations.md).

Registered in the proxy's config.yaml:

    guardrails:
      - guardrail_name: loopfix
        litellm_params:
          guardrail: loopfix.integrations.litellm.LoopfixGuardrail
          mode: post_call
          default_on: true
          on_loop: stop           # or observe (the serve's `action`)
          holdback_tokens: 64
          metrics_port: 9464      # optional: Prometheus text on 127.0.0.1:9464/metrics

One mechanism: every completion goes through the serve's `Exchange` (its `Choice`s: the
`PartWatcher`s, holdback and stop), fed from LiteLLM's chunks instead of an HTTP upstream.
- streamed (`async_post_call_streaming_iterator_hook`): chunks are watched as they pass; under
  stop a loop ends the choice after the loop's first copy with finish_reason "repetition", and
  the LiteLLM stream is closed (the upstream stops generating);
- not streamed (`async_post_call_success_hook`): LiteLLM hands over the whole answer, so the
  watch judges it at once; under stop the answer is cut after the loop's first copy. The
  tokens are already spent: the usage stays the upstream's.
Rescue and think-escape are refused: a continuation needs the upstream's token ids (vLLM's
`/tokenize`), which LiteLLM does not route, and a request of its own that the hook cannot
send through the proxy's router with the caller's key and budget. For them, put `loopfix serve`
between LiteLLM and the model server.

LiteLLM maps every finish reason it does not know to "stop" when it builds a choice, vLLM's
"repetition" included; the guardrail sets the finish reason on the built choice, after that
mapping, so the client reads "repetition". The upstream's own "repetition" survives only in a
non-streamed answer, where LiteLLM keeps it as the choice's `native_finish_reason`; in a stream
it is "stop" before any hook sees it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, cast

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.types.utils import ModelResponse, ModelResponseStream
from prometheus_client import start_http_server
from pydantic import ValidationError

from loopfix.serve.assemble import assemble
from loopfix.serve.choice import Policy
from loopfix.serve.config import ServeConfig
from loopfix.serve.exchange import Exchange
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import CHAT_PATH, RequestBody, StreamChunk, choice_count
from loopfix.serve.upstream import Upstream, UpstreamError, UpstreamStream, events_of_answer

__all__ = ["LoopfixGuardrail"]

REPETITION = "repetition"
ACTIONS = ("observe", "stop")
# ServeConfig wants an upstream; the guardrail's is LiteLLM itself, never contacted by loopfix.
_NO_UPSTREAM = "http://litellm.invalid"
# The request fields the watch reads (choices, usage); LiteLLM's own keys stay out.
_BODY_FIELDS = ("model", "messages", "n", "stream_options")
# The watched texts of a non-streamed message (LiteLLM names vLLM's `reasoning`
# `reasoning_content`).
_MESSAGE_TEXTS = ("content", "reasoning_content", "reasoning")


def _settings(values: dict[str, Any]) -> ServeConfig:
    """The serve settings of a guardrail's litellm_params; ValueError in one line."""
    action = values.get("action", "stop")
    if action not in ACTIONS:
        raise ValueError(
            f"loopfix guardrail: on_loop must be one of {', '.join(ACTIONS)}, got {action!r} "
            "(rescue and think-escape need `loopfix serve` between LiteLLM and the model server)"
        )
    try:
        return ServeConfig(upstream=_NO_UPSTREAM, **{**values, "action": action})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"loopfix guardrail: {field}: {first['msg']}") from None


class _LiteLLMStream(UpstreamStream):
    """LiteLLM's chunks (objects, or dicts) as the stream an `Exchange` reads. `last` is the
    item the newest event came from: under observe the exchange passes that very event on, and
    the guardrail yields the item itself, untouched."""

    def __init__(self, items: AsyncIterator[Any], choices: int, metrics: ServeMetrics):
        # No HTTP response: the base class's reading is replaced, its event checks are kept.
        self._items = items
        self._choices = choices
        self._metrics = metrics
        self.done = False
        self.last: tuple[StreamChunk, Any] | None = None

    async def events(self) -> AsyncIterator[tuple[StreamChunk, str]]:
        async for item in self._items:
            raw = item if isinstance(item, dict) else item.model_dump(exclude_none=True)
            event = self._checked(raw)
            self.last = event, item
            yield event, ""  # the text is never sent: the guardrail yields objects
        self.done = True

    async def close(self) -> None:
        close = getattr(self._items, "aclose", None)
        if close is not None:
            await close()  # LiteLLM's stream closes its upstream request


class _NoContinuation(Upstream):
    """The exchange's upstream: LiteLLM sent the request; observe and stop never continue."""

    def __init__(self) -> None:  # no HTTP client: nothing is ever sent from here
        pass

    async def open(self, path: str, body: RequestBody) -> UpstreamStream:
        raise UpstreamError(502, "a LiteLLM guardrail cannot send a continuation")


async def _each(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def _prepended(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """`first`, then the rest of LiteLLM's stream; closing it closes that stream at once (which
    ends the upstream request), not when the collector finds it."""
    try:
        yield first
        async for item in rest:
            yield item
    finally:
        close = getattr(rest, "aclose", None)
        if close is not None:
            await close()


def _stream_chunk(chunk: StreamChunk) -> ModelResponseStream:
    """A chunk of the exchange as LiteLLM's object; the finish reason is set after LiteLLM's
    mapping, which would turn "repetition" into "stop"."""
    built = ModelResponseStream(**chunk)
    for choice, source in zip(built.choices, chunk.get("choices") or [], strict=True):
        if source.get("finish_reason") == REPETITION:
            choice.finish_reason = REPETITION
    return built


class LoopfixGuardrail(CustomGuardrail):
    """Watches every chat completion through the proxy; `on_loop` observe or stop."""

    def __init__(
        self,
        on_loop: str = "stop",
        holdback_tokens: int | None = None,
        detect: dict[str, Any] | None = None,
        metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1",
        **kwargs: Any,
    ):
        # `on_loop`, not the serve's `action`: LiteLLM's guardrail params have an `action` of
        # their own (block or mask, for its content filters), and a value it rejects makes the
        # proxy start without the guardrail.
        given = {"action": on_loop, "holdback_tokens": holdback_tokens, "detect": detect}
        self.config = _settings({k: v for k, v in given.items() if v is not None})
        self.metrics = ServeMetrics()
        if metrics_port is not None:
            try:
                start_http_server(metrics_port, metrics_host, registry=self.metrics.registry)
            except OSError as error:
                raise ValueError(
                    f"loopfix guardrail: metrics_port: cannot listen on "
                    f"{metrics_host}:{metrics_port}: {error.strerror}"
                ) from None
        super().__init__(**kwargs)

    def _exchange(self, request_data: dict[str, Any]) -> Exchange:
        body = cast(RequestBody, {k: request_data[k] for k in _BODY_FIELDS if k in request_data})
        config = self.config
        policy = Policy(config.action, config.max_rescues, config.holdback_tokens)
        return Exchange(CHAT_PATH, body, policy, config, _NoContinuation(), self.metrics)

    def _counted(self) -> None:
        self.metrics.requests.labels(CHAT_PATH, self.config.action, "200").inc()

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncIterator[Any]:
        items = aiter(response)
        first = await anext(items, None)
        if first is None:
            return
        if "messages" not in request_data or not isinstance(first, ModelResponseStream):
            # No OpenAI chat stream (a text completion; Anthropic's /v1/messages, whose raw
            # events reach this hook as bytes): passed on unwatched.
            yield first
            async for item in items:
                yield item
            return
        exchange = self._exchange(request_data)
        watched = _prepended(first, items)
        stream = _LiteLLMStream(watched, choice_count(exchange.body, True), self.metrics)
        exchange.stream = stream
        self.metrics.active_streams.inc()
        try:
            async for chunk, _ in exchange.chunks():
                last = stream.last
                yield last[1] if last is not None and chunk is last[0] else _stream_chunk(chunk)
            self._counted()
        finally:
            self.metrics.active_streams.dec()
            await stream.close()

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> Any:
        if not isinstance(response, ModelResponse) or "messages" not in data:
            return response
        exchange = self._exchange(data)
        dumped = response.model_dump(exclude_none=True)
        for choice in dumped["choices"]:
            # LiteLLM keeps the upstream's own reason (vLLM's repetition_detection) here.
            native = (choice.get("provider_specific_fields") or {}).get("native_finish_reason")
            if native == REPETITION:
                choice["finish_reason"] = REPETITION
        answer = events_of_answer(dumped)
        exchange.stream = _LiteLLMStream(_each(answer), len(response.choices), self.metrics)
        chunks = [chunk async for chunk, _ in exchange.chunks()]
        self._counted()
        if self.config.action == "observe":
            return response
        watched = assemble(chunks, chat=True)["choices"]
        for choice, seen in zip(response.choices, watched, strict=True):
            if seen.get("finish_reason") == REPETITION:
                message = seen["message"]
                for name in _MESSAGE_TEXTS:  # each text as far as the watch let it through
                    if getattr(choice.message, name, None) is not None:
                        setattr(choice.message, name, message.get(name) or "")
                choice.finish_reason = REPETITION
        return response
