"""`Choice`: one choice of a proxied answer, from the upstream's deltas to the client's.

Each text field (`content`, `reasoning_content` or `reasoning`, and `text` for completions) is
fed to its part's `PartWatcher`. Under observe nothing is sent from here (the event goes to the
client untouched). Under the other actions a part's text is released once it lies more than
`holdback_tokens` tokens behind the newest one, so that a loop's repeats can be withheld; a
part's held text is released when the next part starts, the choice finishes or its stream
breaks off.

A loop (or the upstream's own finish_reason "repetition") is recorded; then, by action: stop ends
the choice after the text before the repeat with finish_reason "repetition"; rescue and
think-escape (on a reasoning loop) release that text and set `awaiting`, the continuation the
exchange is to request. A think-escape of an answer loop stops it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from loopfix.serve.config import Action, ServeConfig
from loopfix.serve.continuation import Continuation, in_open_reasoning
from loopfix.serve.cut_point import at_sentence_end, banned_piece, tokens_within
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import Delta, Logprobs, PartName, StreamChoice, TextField
from loopfix.serve.watch import Detection, PartWatcher

# Upstream text fields (in the order they are fed) and the part each belongs to.
PART_OF_FIELD: dict[TextField, PartName] = {
    "content": "content",
    "text": "content",
    "reasoning_content": "reasoning",
    "reasoning": "reasoning",
}


@dataclass(frozen=True)
class Policy:
    """The settings one request runs under (the server's, overridden by the request)."""

    action: Action
    max_rescues: int
    holdback_tokens: int


@dataclass(frozen=True)
class Watch:
    """What every choice of one request shares."""

    chat: bool
    policy: Policy
    config: ServeConfig
    metrics: ServeMetrics


@dataclass
class Part:
    """One watched text of one choice and how much of it the client has."""

    name: PartName
    watcher: PartWatcher
    fields: list[TextField] = field(default_factory=list)  # upstream fields it arrived under
    released: int = 0
    closed: bool = False

    def held_target(self, hold: int) -> int:
        """Where the text ends that lies more than `hold` tokens behind the newest one."""
        watcher = self.watcher
        if watcher.tokens <= hold or watcher.tokens - hold - 1 < watcher.first_token:
            return self.released
        return max(self.released, watcher.end_of_token(watcher.tokens - hold - 1))

    def take(self, target: int, forget: bool) -> str:
        """The text up to `target` that the client lacks, now counted as released; `forget`
        drops it from the watcher (stop never resends it: bounded memory)."""
        watcher = self.watcher
        text = watcher.text[self.released - watcher.start : target - watcher.start]
        self.released = max(self.released, target)
        if forget:
            watcher.forget(self.released)
        return text


class Choice:
    """One choice's parts and state; every method returns the client's choice outputs."""

    def __init__(self, index: int, watch: Watch, prompt: str):
        self.index = index
        self.watch = watch
        self.prompt = prompt  # the completions prompt it answers ("" for chat)
        self.parts: dict[PartName, Part] = {}
        self.finish_reason: str | None = None
        self.awaiting: Continuation | None = None
        self.rescues = 0
        self.escaped = False  # a think-escape ended the reasoning: all later text is answer
        self.intervened = False  # the proxy stopped the choice or continues it elsewhere
        self.generated = 0  # upstream events that carried its text: its tokens, on vLLM

    @property
    def settled(self) -> bool:
        return self.finish_reason is not None or self.awaiting is not None

    def feed(
        self, choice: StreamChoice, into: PartName | None = None, continuation: bool = False
    ) -> list[StreamChoice]:
        """Feed one upstream choice (checked on arrival: its texts are strings). A
        continuation's text goes to part `into` (None: the part its field names)."""
        chat, action = self.watch.chat, self.watch.policy.action
        delta: Delta = (choice.get("delta") or {}) if chat else {"text": choice.get("text")}
        if any(delta.get(name) for name in PART_OF_FIELD):
            self.generated += 1
        if self.settled:
            return []  # a stopped choice, or one that continues elsewhere
        outputs: list[StreamChoice] = []
        fed: dict[PartName, str] = {}
        for name in PART_OF_FIELD:
            text = delta.get(name)
            if not text or self.settled:
                continue
            part_name = into or PART_OF_FIELD[name]
            if fed.get(part_name) == text:
                continue  # the same text under both names of the reasoning field
            fed[part_name] = text
            if part_name == "content" and "reasoning" in self.parts:
                outputs += self._close(self.parts["reasoning"])
                if self.settled:
                    break
            part = self._part(part_name, None if continuation else name)
            found = self._feed(part, text)
            if found is not None:
                outputs += self._on_loop(part, found)
        if not self.settled and action != "observe":
            outputs += self._release_open_parts(choice, continuation)
        finish = choice.get("finish_reason")
        if finish and not self.settled:
            outputs += self._finish(str(finish))
        return [] if action == "observe" else outputs  # observe passes the event on untouched

    def drain(self) -> list[StreamChoice]:
        """The stream ended or broke off before the choice finished: release what it holds
        (nothing is lost), without inventing a finish reason."""
        outputs: list[StreamChoice] = []
        for part in list(self.parts.values()):
            if not self.settled and self.watch.policy.action != "observe":
                outputs += self._close(part, cut=None)
        return outputs

    def end(self, reason: str) -> list[StreamChoice]:
        self.finish_reason = reason
        for part in self.parts.values():
            self.watch.metrics.completion_tokens.labels(part.name).observe(part.watcher.tokens)
        return [self.output({}, reason)]

    def output(
        self, delta: Delta, finish: str | None = None, logprobs: Logprobs | None = None
    ) -> StreamChoice:
        body: StreamChoice = (
            {"delta": delta} if self.watch.chat else {"text": delta.get("text", "")}
        )
        return {"index": self.index, **body, "logprobs": logprobs, "finish_reason": finish}

    def _feed(self, part: Part, text: str | None, cut: bool | None = None) -> Detection | None:
        """Feed text (None: the part ended, `cut` as for `PartWatcher.finish`) and count the
        tokens it completed."""
        metrics, watcher = self.watch.metrics, part.watcher
        before = watcher.tokens
        found = watcher.finish(cut) if text is None else watcher.feed(text)
        metrics.stream_tokens.labels(part.name).inc(watcher.tokens - before)
        if text is None and watcher.verdict is not None:
            looping = "true" if watcher.verdict.looping else "false"
            cut_label = "unknown" if cut is None else str(cut).lower()
            metrics.verdicts.labels(part.name, looping, cut_label).inc()
        return found

    def _part(self, name: PartName, field_name: TextField | None) -> Part:
        """Part `name`; `field_name` is the upstream field its text came under (None in a
        continuation: the part keeps the names its first text came under)."""
        part = self.parts.get(name)
        if part is None:
            keep = self.watch.policy.action != "observe"
            part = Part(name, PartWatcher(self.watch.config.detect, keep_text=keep))
            self.parts[name] = part
        if field_name is None and not part.fields:
            field_name = name if self.watch.chat else "text"
        if field_name is not None and field_name not in part.fields:
            part.fields.append(field_name)
        return part

    def _close(self, part: Part, cut: bool | None = False) -> list[StreamChoice]:
        """Close a part: `cut` as for `PartWatcher.finish` (a reasoning part that the answer
        follows ended by itself: False)."""
        if part.closed:
            return []
        part.closed = True
        found = self._feed(part, None, cut)
        outputs = self._on_loop(part, found) if found is not None else []
        if not self.settled:
            outputs += self._release(part, part.watcher.length)
        return outputs

    def _finish(self, reason: str) -> list[StreamChoice]:
        outputs: list[StreamChoice] = []
        for part in list(self.parts.values()):
            outputs += self._close(part, cut=reason == "length")
            if self.settled:
                return outputs
        if reason == "repetition":
            last = self.parts.get("content") or next(iter(self.parts.values()), None)
            self._record_loop("upstream", last.name if last else "content", last, None)
        elif reason == "length":
            self.watch.metrics.cuts.inc()
        return outputs + self.end(reason)

    # --- loops ------------------------------------------------------------------------------
    def _record_loop(
        self, kind: str, part_name: str, part: Part | None, found: Detection | None
    ) -> None:
        metrics = self.watch.metrics
        metrics.loops.labels(kind, part_name, self.watch.policy.action).inc()
        onset = found.onset if found is not None else (part.watcher.tokens if part else 0)
        metrics.onset.labels(part_name).observe(onset)

    def _on_loop(self, part: Part, found: Detection) -> list[StreamChoice]:
        self._record_loop(found.kind, part.name, part, found)
        policy = self.watch.policy
        if policy.action == "observe":
            return []
        watcher = part.watcher
        kept = max(found.onset + found.period, tokens_within(watcher, part.released))
        kept = at_sentence_end(watcher, kept, found.period)
        keep = watcher.end_of_token(kept - 1) if kept > watcher.first_token else part.released
        outputs = self._release(part, keep)
        escape = (
            policy.action == "think-escape" and not self.escaped and self._in_reasoning(part, keep)
        )
        self.intervened = True
        if (policy.action == "rescue" or escape) and self.rescues < policy.max_rescues:
            banned = banned_piece(watcher, kept, found.period)
            watcher.rewind(keep)
            part.released = keep
            # A loop found as the part closed (at its finish, or as the answer began) reopens
            # it: the continuation's text belongs to it and must be released.
            part.closed = False
            self.awaiting = Continuation(part.name, banned, escape)
            return outputs
        if self.rescues:
            self.watch.metrics.rescues.labels("looped").inc()
        return outputs + self.end("repetition")

    def _in_reasoning(self, part: Part, keep: int) -> bool:
        """Whether the loop lies in reasoning: the reasoning part of a chat, or text (a
        completion's prompt and text, or a chat's content, as a server without a reasoning
        parser sends it) that up to `keep` ends inside an open think block."""
        if part.name == "reasoning":
            return True
        text = self.prompt + part.watcher.text[: keep - part.watcher.start]
        return in_open_reasoning(text, self.watch.config)

    # --- holdback ---------------------------------------------------------------------------
    def _release_open_parts(self, choice: StreamChoice, continuation: bool) -> list[StreamChoice]:
        """Release what the holdback allows of every open part. What the upstream choice carries
        besides its text (role, tool calls, logprobs) rides on the first release; a
        continuation's role is not repeated."""
        delta = (choice.get("delta") or {}) if self.watch.chat else {}
        skip = {*PART_OF_FIELD, "role"} if continuation else set(PART_OF_FIELD)
        extra = cast(Delta, {key: value for key, value in delta.items() if key not in skip})
        logprobs, outputs = choice.get("logprobs"), []
        for part in self.parts.values():
            if not part.closed:
                hold = self.watch.policy.holdback_tokens
                outputs += self._release(part, part.held_target(hold), extra, logprobs)
                extra, logprobs = {}, None
        if extra or logprobs is not None:
            outputs.append(self.output(extra, None, logprobs))
        return outputs

    def _release(
        self, part: Part, target: int, extra: Delta | None = None, logprobs: Logprobs | None = None
    ) -> list[StreamChoice]:
        action = self.watch.policy.action
        if action == "observe":
            return []
        text = part.take(target, forget=action == "stop")
        delta: Delta = {**(extra or {})}
        for name in part.fields if text else ():
            delta[name] = text
        return [self.output(delta, None, logprobs)] if delta or logprobs is not None else []
