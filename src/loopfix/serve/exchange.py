"""`Exchange`: one proxied generation request, from the upstream's events to the client's chunks.

Steps:
1. Open the upstream stream (the body without its `loopfix` field, always streamed).
2. For every event, per choice: feed each text field (`content`, `reasoning_content` or
   `reasoning`, and `text` for completions) to that part's `PartWatcher`. Under observe the event
   goes to the client untouched. Under the other actions the part's text is released to the
   client once it lies more than `holdback_tokens` tokens behind the newest one, so that a loop's
   repeats can be withheld; a part's held text is released when the next part starts or the
   choice finishes.
3. A loop (or the upstream's own finish_reason "repetition") is recorded; then, by action:
   stop ends the choice after the text before the repeat with finish_reason "repetition";
   rescue and think-escape (on a reasoning loop) release that text and mark the choice for a
   continuation. A think-escape of an answer loop stops it.
4. Once every choice has finished, stopped or awaits a continuation, the upstream request is
   closed (it stops generating).
5. Each awaiting choice is continued by `continuation.py`'s request, whose events go through
   step 2 under the choice's index, until it finishes or its rescue budget is spent.
6. The usage chunk comes last: the upstream's own when it ran to its end untouched; else (the
   proxy closed it, so it never sent one) the tokens it generated, counted here.
The chunks carry the upstream's id, so the client sees one answer per choice. A stream that
stops without `[DONE]` while a choice has not finished was cut: what was held back is released,
then an UpstreamError (502) says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

from loopfix.serve.config import Action, ServeConfig
from loopfix.serve.continuation import Continuation, continuation_body, in_open_reasoning
from loopfix.serve.cut_point import at_sentence_end, banned_piece, tokens_within
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import (
    Delta,
    Logprobs,
    PartName,
    RequestBody,
    StreamChoice,
    StreamChunk,
    TextField,
    Usage,
    envelope,
)
from loopfix.serve.upstream import Upstream, UpstreamError, UpstreamStream
from loopfix.serve.watch import Detection, PartWatcher

# Upstream text fields (in the order they are fed) and the part each belongs to.
PART_OF_FIELD: dict[TextField, PartName] = {
    "content": "content",
    "text": "content",
    "reasoning_content": "reasoning",
    "reasoning": "reasoning",
}
CHAT_PATH = "/v1/chat/completions"
Chunk = tuple[StreamChunk, str]  # a chunk for the client and its JSON text


@dataclass
class Part:
    """One watched text of one choice and how much of it the client has."""

    name: PartName
    watcher: PartWatcher
    fields: list[TextField] = field(default_factory=list)  # upstream fields it arrived under
    released: int = 0
    closed: bool = False


@dataclass
class ChoiceState:
    index: int
    parts: dict[PartName, Part] = field(default_factory=dict)
    finish_reason: str | None = None
    awaiting: Continuation | None = None
    rescues: int = 0
    escaped: bool = False  # a think-escape ended the reasoning: all later text is answer
    intervened: bool = False  # the proxy stopped the choice or continues it elsewhere

    @property
    def settled(self) -> bool:
        return self.finish_reason is not None or self.awaiting is not None


@dataclass(frozen=True)
class Policy:
    """The settings one request runs under (the server's, overridden by the request)."""

    action: Action
    max_rescues: int
    holdback_tokens: int


@dataclass(frozen=True)
class Extra:
    """What an upstream choice carries besides its text, passed on with its first release: the
    delta's other fields (role, tool calls) and the logprobs."""

    delta: Delta
    logprobs: Logprobs | None

    def __bool__(self) -> bool:
        return bool(self.delta) or self.logprobs is not None


NO_EXTRA = Extra({}, None)


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
    ):
        self.path = path
        self.body = body
        self.policy = policy
        self.config = config
        self.upstream = upstream
        self.metrics = metrics
        self.chat = path == CHAT_PATH
        self.choices: dict[int, ChoiceState] = {}
        self.envelope: StreamChunk = {}
        self.expected_choices = _choice_count(body, self.chat)
        self.stream: UpstreamStream | None = None
        self.generated = 0  # upstream events that carried a choice's text: its tokens, on vLLM
        self.upstream_usage: Usage = {}  # the last usage the upstream sent
        self.usage_event: Chunk | None = None  # the upstream's usage chunk, held until the end

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
        stream = self.stream
        assert stream is not None, "open() first"
        try:
            async for event, data in stream.events():
                for chunk in self._event(event, data):
                    yield chunk
                if self._all_settled() and self._intervened():
                    break
        finally:
            await stream.close()
        unfinished = not self._all_settled()
        states = sorted(self.choices.values(), key=lambda s: s.index)
        for state in states:
            for output in self._drain(state):
                yield self._chunk(output)
        self._check_ended(stream, unfinished)
        for state in states:
            async for chunk in self._continue(state):
                yield chunk
        usage = self._usage_chunk()
        if usage is not None:
            yield usage

    def _check_ended(self, stream: UpstreamStream, unfinished: bool) -> None:
        """A stream that stopped without `[DONE]` while a choice was unfinished was cut (a
        crashed upstream, a dropped connection): an error, not a complete answer."""
        if unfinished and not stream.done:
            self.metrics.upstream_errors.labels("protocol").inc()
            raise UpstreamError(
                502,
                "the upstream stream ended before every choice finished (no finish_reason "
                "and no [DONE])",
            )

    # --- step 2: events -------------------------------------------------------------------
    def _event(self, event: StreamChunk, data: str) -> Iterator[Chunk]:
        if not self.envelope:
            self.envelope = envelope(event)
        choices = event.get("choices") or []
        outputs = [out for choice in choices for out in self._choice(choice, remap=None)]
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.upstream_usage = usage
        if self.policy.action == "observe":
            yield event, data  # untouched
        elif outputs:
            for output in outputs:
                yield self._chunk(output)
        elif not choices and "usage" in event:
            self.usage_event = event, data  # the last chunk: a continuation may come first

    def _choice(
        self, choice: StreamChoice, remap: tuple[int, PartName | None] | None
    ) -> list[StreamChoice]:
        """Feed one upstream choice; the client's choice outputs. `remap` = (index, part) for a
        continuation: its events belong to that choice, its text to that part (None: as sent)."""
        index = remap[0] if remap else int(choice.get("index", 0))
        state = self.choices.setdefault(index, ChoiceState(index))
        # Events are checked on arrival (upstream.event_problem): text fields are strings.
        delta: Delta = (choice.get("delta") or {}) if self.chat else {"text": choice.get("text")}
        if any(delta.get(name) for name in PART_OF_FIELD):
            self.generated += 1
        if state.settled:
            return []  # a stopped choice, or one that continues elsewhere
        outputs: list[StreamChoice] = []
        fed: dict[PartName, str] = {}
        for name in PART_OF_FIELD:
            text = delta.get(name)
            if not text or state.settled:
                continue
            part_name = remap[1] if remap and remap[1] else PART_OF_FIELD[name]
            if fed.get(part_name) == text:
                continue  # the same text under both names of the reasoning field
            fed[part_name] = text
            if part_name == "content" and "reasoning" in state.parts:
                outputs += self._close_part(state, state.parts["reasoning"])
                if state.settled:
                    break
            part = self._part(state, part_name, name if remap is None else None)
            found = self._feed(part, text)
            if found is not None:
                outputs += self._on_loop(state, part, found)
        observe = self.policy.action == "observe"
        if not state.settled and not observe:
            extra = _extra(choice, self.chat, continuation=remap is not None)
            outputs += self._release_all_parts(state, extra)
        finish = choice.get("finish_reason")
        if finish and not state.settled:
            outputs += self._finish(state, str(finish))
        return [] if observe else outputs  # under observe the event goes on untouched

    def _feed(self, part: Part, text: str | None, cut: bool | None = None) -> Detection | None:
        """Feed text (None: the part ended, `cut` as for `PartWatcher.finish`) and count the
        tokens it completed."""
        before = part.watcher.tokens
        found = part.watcher.finish(cut) if text is None else part.watcher.feed(text)
        self.metrics.stream_tokens.labels(part.name).inc(part.watcher.tokens - before)
        if text is None and part.watcher.verdict is not None:
            looping = "true" if part.watcher.verdict.looping else "false"
            cut_label = "unknown" if cut is None else str(cut).lower()
            self.metrics.verdicts.labels(part.name, looping, cut_label).inc()
        return found

    def _part(self, state: ChoiceState, name: PartName, field_name: TextField | None) -> Part:
        """The choice's part `name`; `field_name` is the upstream field its text came under (None
        in a continuation: the part keeps the names its first text came under)."""
        part = state.parts.get(name)
        if part is None:
            keep = self.policy.action != "observe"
            part = Part(name, PartWatcher(self.config.detect, keep_text=keep))
            state.parts[name] = part
        if field_name is None and not part.fields:
            field_name = name if self.chat else "text"
        if field_name is not None and field_name not in part.fields:
            part.fields.append(field_name)
        return part

    def _close_part(
        self, state: ChoiceState, part: Part, cut: bool | None = False
    ) -> list[StreamChoice]:
        """Close a part: `cut` as for `PartWatcher.finish` (a reasoning part that the answer
        follows ended by itself: False)."""
        if part.closed:
            return []
        part.closed = True
        found = self._feed(part, None, cut)
        outputs = self._on_loop(state, part, found) if found is not None else []
        if not state.settled:
            outputs += self._release(state, part, part.watcher.length)
        return outputs

    def _drain(self, state: ChoiceState) -> list[StreamChoice]:
        """A stream ended without finishing the choice: release what it holds (nothing is
        lost), without inventing a finish reason."""
        outputs: list[StreamChoice] = []
        for part in list(state.parts.values()):
            if not state.settled and self.policy.action != "observe":
                outputs += self._close_part(state, part, cut=None)
        return outputs

    def _finish(self, state: ChoiceState, reason: str) -> list[StreamChoice]:
        outputs: list[StreamChoice] = []
        for part in list(state.parts.values()):
            outputs += self._close_part(state, part, cut=reason == "length")
            if state.settled:
                return outputs
        if reason == "repetition":
            last = state.parts.get("content") or next(iter(state.parts.values()), None)
            self._record_loop("upstream", last.name if last else "content", last, None)
        elif reason == "length":
            self.metrics.cuts.inc()
        return outputs + self._end(state, reason)

    def _end(self, state: ChoiceState, reason: str) -> list[StreamChoice]:
        state.finish_reason = reason
        for part in state.parts.values():
            self.metrics.completion_tokens.labels(part.name).observe(part.watcher.tokens)
        return [self._output(state.index, {}, reason)]

    # --- step 3: loops ----------------------------------------------------------------------
    def _record_loop(
        self, kind: str, part_name: str, part: Part | None, found: Detection | None
    ) -> None:
        self.metrics.loops.labels(kind, part_name, self.policy.action).inc()
        onset = found.onset if found is not None else (part.watcher.tokens if part else 0)
        self.metrics.onset.labels(part_name).observe(onset)

    def _on_loop(self, state: ChoiceState, part: Part, found: Detection) -> list[StreamChoice]:
        self._record_loop(found.kind, part.name, part, found)
        action = self.policy.action
        if action == "observe":
            return []
        watcher = part.watcher
        kept = max(found.onset + found.period, tokens_within(watcher, part.released))
        kept = at_sentence_end(watcher, kept, found.period)
        keep = watcher.end_of_token(kept - 1) if kept > watcher.first_token else part.released
        outputs = self._release(state, part, keep)
        escape = (
            action == "think-escape" and not state.escaped and self._in_reasoning(state, part, keep)
        )
        state.intervened = True
        if (action == "rescue" or escape) and state.rescues < self.policy.max_rescues:
            banned = banned_piece(watcher, kept, found.period)
            watcher.rewind(keep)
            part.released = keep
            # A loop found as the part closed (at its finish, or as the answer began) reopens
            # it: the continuation's text belongs to it and must be released.
            part.closed = False
            state.awaiting = Continuation(part.name, banned, escape)
            return outputs
        if state.rescues:
            self.metrics.rescues.labels("looped").inc()
        return outputs + self._end(state, "repetition")

    def _in_reasoning(self, state: ChoiceState, part: Part, keep: int) -> bool:
        """Whether the loop lies in reasoning: the reasoning part of a chat, or a completion whose
        prompt and text end inside an open think block."""
        if self.chat:
            return part.name == "reasoning"
        text = self.prompt_of(state.index) + part.watcher.text[: keep - part.watcher.start]
        return in_open_reasoning(text, self.config)

    # --- holdback -------------------------------------------------------------------------
    def _release_all_parts(self, state: ChoiceState, extra: Extra) -> list[StreamChoice]:
        """Release what the holdback allows of every open part; `extra` rides on the first."""
        outputs: list[StreamChoice] = []
        for part in state.parts.values():
            if part.closed:
                continue
            outputs += self._release(state, part, self._held_target(part), extra)
            extra = NO_EXTRA
        if extra:
            outputs.append(self._output(state.index, extra.delta, None, extra.logprobs))
        return outputs

    def _held_target(self, part: Part) -> int:
        watcher, hold = part.watcher, self.policy.holdback_tokens
        if watcher.tokens <= hold or watcher.tokens - hold - 1 < watcher.first_token:
            return part.released
        return max(part.released, watcher.end_of_token(watcher.tokens - hold - 1))

    def _release(
        self, state: ChoiceState, part: Part, target: int, extra: Extra = NO_EXTRA
    ) -> list[StreamChoice]:
        if self.policy.action == "observe":
            return []
        watcher = part.watcher
        text = watcher.text[part.released - watcher.start : target - watcher.start]
        part.released = max(part.released, target)
        if self.policy.action == "stop":
            watcher.forget(part.released)  # never resent: bounded memory
        if not text and not extra:
            return []
        delta = extra.delta.copy()
        if text:
            for name in part.fields:
                delta[name] = text
        return [self._output(state.index, delta, None, extra.logprobs)]

    # --- output ---------------------------------------------------------------------------
    def _output(
        self, index: int, delta: Delta, finish: str | None, logprobs: Logprobs | None = None
    ) -> StreamChoice:
        if self.chat:
            return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return {
            "index": index,
            "text": delta.get("text", ""),
            "logprobs": logprobs,
            "finish_reason": finish,
        }

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
        usage: Usage = {
            "prompt_tokens": prompt,
            "completion_tokens": self.generated,
            "total_tokens": prompt + self.generated,
        }
        return self._encoded([], usage)

    def _all_settled(self) -> bool:
        """Whether every choice the request asked for has finished, stopped or awaits a
        continuation."""
        return len(self.choices) >= self.expected_choices and all(
            state.settled for state in self.choices.values()
        )

    def _intervened(self) -> bool:
        """Whether the proxy stopped or continued a choice (until then the upstream's own end,
        with its usage, is awaited)."""
        return any(state.intervened for state in self.choices.values())

    def prompt_of(self, index: int) -> str:
        """The completions prompt choice `index` answers ("" for chat)."""
        prompt = self.body.get("prompt", "")
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], str):
            return str(prompt[min(index // max(1, int(self.body.get("n") or 1)), len(prompt) - 1)])
        return prompt if isinstance(prompt, str) else ""

    # --- step 5: continuations ------------------------------------------------------------
    async def _continue(self, state: ChoiceState) -> AsyncIterator[Chunk]:
        while state.awaiting is not None:
            plan, state.awaiting = state.awaiting, None
            state.rescues += 1
            if plan.escape:
                state.escaped = True
                if not self.chat:  # the marker is part of a completion's text
                    yield self._chunk(
                        self._output(state.index, {"text": self.config.think_end}, None)
                    )
            try:
                body = await continuation_body(
                    self.body,
                    plan,
                    {name: part.watcher.text for name, part in state.parts.items()},
                    prompt=None if self.chat else self.prompt_of(state.index),
                    config=self.config,
                    upstream=self.upstream,
                )
                stream = await self.upstream.open(self.path, body)
            except UpstreamError:
                self.metrics.rescues.labels("failed").inc()
                for output in self._end(state, "repetition"):
                    yield self._chunk(output)
                return
            part: PartName | None = (
                "content" if plan.escape or plan.part == "content" or not self.chat else None
            )
            try:
                async for event, _ in stream.events():
                    for choice in event.get("choices") or []:
                        for output in self._choice(choice, remap=(state.index, part)):
                            yield self._chunk(output)
                    if state.settled:
                        break
            finally:
                await stream.close()
            unfinished = not state.settled
            for output in self._drain(state):
                yield self._chunk(output)
            self._check_ended(stream, unfinished)
            if state.awaiting is None and state.finish_reason != "repetition":
                self.metrics.rescues.labels("finished").inc()
            elif state.awaiting is not None:
                self.metrics.rescues.labels("looped").inc()


def _extra(choice: StreamChoice, chat: bool, continuation: bool) -> Extra:
    """What a choice carries besides its text (role, tool calls, logprobs) to pass on; a
    continuation's role is not repeated."""
    delta = choice.get("delta") if chat else None
    others: Delta = delta.copy() if isinstance(delta, dict) else {}
    for name in PART_OF_FIELD:
        others.pop(name, None)
    if continuation:
        others.pop("role", None)
    return Extra(others, choice.get("logprobs"))


def _choice_count(body: RequestBody, chat: bool) -> int:
    n = body.get("n") or 1  # checked by the app: a positive integer or absent
    prompts = body.get("prompt")
    many = not chat and isinstance(prompts, list) and prompts and isinstance(prompts[0], str)
    return int(n) * (len(prompts) if many else 1)  # type: ignore[arg-type]
