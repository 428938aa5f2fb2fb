"""`Exchange`: one proxied generation request, from the upstream's events to the client's chunks.

1. The upstream stream is opened (the body without its `loopfix` field, always streamed).
2. Every event's choices are fed to their `Choice` (choice.py: watching, holdback, loops); under
   observe the event goes to the client untouched, else the choices' outputs do.
3. Once every choice has finished, stopped or awaits a continuation, and the proxy intervened
   in one, the upstream request is closed (it stops generating); until then its own end, with
   its usage, is awaited.
4. Each awaiting choice is continued by `continuation.py`'s request, whose events go through
   step 2 under the choice's index, until it finishes or its rescue budget is spent.
5. The usage chunk comes last: the upstream's own when it ran to its end untouched; else (the
   proxy closed it, so it never sent one) the tokens it generated, counted per choice.
The chunks carry the upstream's id, so the client sees one answer per choice. When a stream
fails (an UpstreamError: stalled, dropped, junk) or stops without `[DONE]` while a choice has
not finished, what was held back is released first, then an UpstreamError says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial

from loopfix.agents import AgentVerdict
from loopfix.serve import agent_check
from loopfix.serve.agent_check import AgentAction
from loopfix.serve.choice import Choice, Policy, Watch
from loopfix.serve.config import ServeConfig
from loopfix.serve.continuation import continuation_body
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import (
    CHAT_PATH,
    Delta,
    PartName,
    RequestBody,
    StreamChoice,
    StreamChunk,
    Usage,
    choice_count,
    envelope,
)
from loopfix.serve.upstream import Upstream, UpstreamError, UpstreamStream

Chunk = tuple[StreamChunk, str]  # a chunk for the client and its JSON text


class Exchange:
    """Runs one request; `chunks()` yields the client's chunks (dicts, in stream order)."""

    def __init__(
        self,
        path: str,
        body: RequestBody,
        policy: Policy,
        config: ServeConfig,
        upstream: Upstream,
        metrics: ServeMetrics,
        agent_action: AgentAction | None = None,
    ):
        self.path = path
        self.body = body
        self.policy = policy
        self.upstream = upstream
        self.metrics = metrics
        self.chat = path == CHAT_PATH
        self.watch = Watch(self.chat, policy, config, metrics)
        # Every choice the request asks for (at most MAX_CHOICES), so an absent one is unsettled.
        count = choice_count(body, self.chat)
        self.choices = [Choice(index, self.watch, self._prompt_of(index)) for index in range(count)]
        self.envelope: StreamChunk = {}
        self.stream: UpstreamStream | None = None
        self.upstream_usage: Usage = {}  # the last usage the upstream sent
        self.usage_event: Chunk | None = None  # the upstream's usage chunk, held until the end
        self.agent_action = agent_action or config.agent_action
        # the tool calls each choice streams: choice index -> call index -> [name, arguments]
        self.answer_calls: dict[int, dict[int, list[str]]] = {}
        self.answer_loop: AgentVerdict | None = None  # a tool call one answer repeats

    async def open(self) -> None:
        """Send the request upstream; raises UpstreamError before any chunk exists."""
        self.stream = await self.upstream.open(self.path, self.body)

    async def close(self) -> None:
        """End the upstream request (idempotent)."""
        if self.stream is not None:
            await self.stream.close()

    async def chunks(self) -> AsyncIterator[Chunk]:
        """The client's chunks, each with its JSON text (an observed upstream event keeps the
        text it came with: nothing is re-encoded)."""
        assert self.stream is not None, "open() first"
        async for chunk in self._read(self.stream, self.choices, self._event):
            yield chunk
        for choice in self.choices:
            async for chunk in self._continue(choice):
                yield chunk
        usage = self._usage_chunk()
        if usage is not None:
            yield usage

    async def _read(
        self,
        stream: UpstreamStream,
        choices: list[Choice],
        on_event: Callable[[StreamChunk, str], Iterable[Chunk]],
    ) -> AsyncIterator[Chunk]:
        """`on_event`'s chunks of each event until `choices` are settled, then (also when the
        stream failed) what they still hold; then the stream's error, if any."""
        failure: UpstreamError | None = None
        try:
            async for event, data in stream.events():
                for chunk in on_event(event, data):
                    yield chunk
                if all(choice.settled for choice in choices) and self._intervened():
                    break
        except UpstreamError as error:
            failure = error  # raised once the held text is out: the client keeps every word
        finally:
            await stream.close()
        unfinished = not all(choice.settled for choice in choices)
        for choice in choices:
            for output in choice.drain():
                yield self._chunk(output)
        if failure is not None:
            raise failure
        if unfinished and not stream.done:  # a crashed upstream, a dropped connection
            self.metrics.upstream_errors.labels("protocol").inc()
            raise UpstreamError(
                502,
                "the upstream stream ended before every choice finished (no finish_reason "
                "and no [DONE])",
            )

    def _event(self, event: StreamChunk, data: str) -> Iterable[Chunk]:
        if not self.envelope:
            self.envelope = envelope(event)
        outputs = [
            output
            for upstream_choice in event.get("choices") or []
            for output in self.choices[upstream_choice.get("index", 0)].feed(upstream_choice)
        ]
        if self.chat and self.agent_action != "off":
            for upstream_choice in event.get("choices") or []:
                self._note_tool_calls(upstream_choice)
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.upstream_usage = usage
        if self.policy.action == "observe":
            return [(event, data)]  # untouched
        if not event.get("choices") and "usage" in event:
            self.usage_event = event, data  # the last chunk: a continuation may come first
        return [self._chunk(output) for output in outputs]

    def _note_tool_calls(self, choice: StreamChoice) -> None:
        """Piece together the tool calls a choice streams; once it finishes, one call made
        `identical_repeats` times in it is counted (docs/agents.md)."""
        calls = self.answer_calls.setdefault(choice.get("index", 0), {})
        for piece in (choice.get("delta") or {}).get("tool_calls") or []:
            call = calls.setdefault(piece["index"], ["", ""])
            function = piece.get("function") or {}
            call[0] += function.get("name") or ""
            call[1] += function.get("arguments") or ""
        if not choice.get("finish_reason") or not calls:
            return
        found = agent_check.repeated_call(
            ((name, arguments) for name, arguments in calls.values()), self.watch.config.agent
        )
        if found is not None:
            self.answer_loop = found
            self.metrics.agent_loops.labels(found.kind, "observe", "answer").inc()

    def _intervened(self) -> bool:
        """Whether the proxy stopped or continued a choice (until then the upstream's own end,
        with its usage, is awaited)."""
        return any(choice.intervened for choice in self.choices)

    def _prompt_of(self, index: int) -> str:
        """The completions prompt choice `index` answers ("" for chat)."""
        prompt = self.body.get("prompt", "")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            return str(prompt[min(index // int(self.body.get("n") or 1), len(prompt) - 1)])
        return prompt if isinstance(prompt, str) else ""

    # --- continuations ----------------------------------------------------------------------
    async def _continue(self, choice: Choice) -> AsyncIterator[Chunk]:
        config = self.watch.config
        while choice.awaiting is not None:
            plan, choice.awaiting = choice.awaiting, None
            choice.rescues += 1
            if plan.escape:
                choice.escaped = True
                if plan.part == "content":  # the think block is in the text: so is its end
                    marker: Delta = (
                        {"content": config.think_end} if self.chat else {"text": config.think_end}
                    )
                    yield self._chunk(choice.output(marker))
            try:
                body = await continuation_body(
                    self.body,
                    plan,
                    {name: part.watcher.text for name, part in choice.parts.items()},
                    prompt=None if self.chat else choice.prompt,
                    config=config,
                    upstream=self.upstream,
                )
                stream = await self.upstream.open(self.path, body)
            except UpstreamError:
                self.metrics.rescues.labels("failed").inc()
                for output in choice.end("repetition"):
                    yield self._chunk(output)
                return
            into: PartName | None = (
                "content" if plan.escape or plan.part == "content" or not self.chat else None
            )

            on_event = partial(self._continued, choice, into)
            async for chunk in self._read(stream, [choice], on_event):
                yield chunk
            if choice.awaiting is None and choice.finish_reason != "repetition":
                self.metrics.rescues.labels("finished").inc()
            elif choice.awaiting is not None:
                self.metrics.rescues.labels("looped").inc()

    def _continued(
        self, choice: Choice, into: PartName | None, event: StreamChunk, _: str
    ) -> Iterable[Chunk]:
        """A continuation's event: every choice of it is `choice`, its text goes to `into`."""
        return [
            self._chunk(output)
            for each in event.get("choices") or []
            for output in choice.feed(each, into, continuation=True)
        ]

    # --- output -----------------------------------------------------------------------------
    def _chunk(self, output: StreamChoice) -> Chunk:
        return self._encoded([output])

    def _encoded(self, choices: list[StreamChoice], usage: Usage | None = None) -> Chunk:
        named = self.envelope or {"id": "loopfix", "created": int(time.time()), "model": ""}
        default = "chat.completion.chunk" if self.chat else "text_completion"
        chunk: StreamChunk = {**named, "object": named.get("object", default), "choices": choices}
        if usage is not None:
            chunk["usage"] = usage
        return chunk, json.dumps(chunk, separators=(",", ":"))

    def _usage_chunk(self) -> Chunk | None:
        """The last chunk: the upstream's usage if it ran to its end untouched; else, when the
        client asked for usage, the prompt tokens the upstream reported (0 if it reported
        none before it was closed) and the tokens it generated, counted one per event."""
        if not self._intervened():
            return self.usage_event
        options = self.body.get("stream_options")
        if self.usage_event is None and not (
            isinstance(options, dict) and options.get("include_usage")
        ):
            return None
        prompt = self.upstream_usage.get("prompt_tokens")
        prompt = prompt if isinstance(prompt, int) else 0
        generated = sum(choice.generated for choice in self.choices)
        usage: Usage = {
            "prompt_tokens": prompt,
            "completion_tokens": generated,
            "total_tokens": prompt + generated,
        }
        return self._encoded([], usage)
