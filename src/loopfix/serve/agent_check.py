"""The proxy's agent check (docs/agents.md): before a chat request goes upstream, its
`messages` are read as an agent trajectory and checked for an agent stuck now (a run of the
stuck rule that reaches the last step). The cost is bounded: only the last `tail_steps` steps
are judged, and they are read either from the last `2 x tail_steps` messages (a step takes at
least one message: a tool result, or a message and its reply) or, for a request that names its
conversation (`loopfix.conversation`), from the messages after those the proxy read for the
same conversation before (`Conversations`).

Inside one streamed answer, the tool calls are pieced together from their deltas; one call
made `identical_repeats` times in a single answer is counted too (`where="answer"`; the header
only on a non-streamed answer, whose headers leave after its end; the answer itself is passed
on, since its calls reached a streaming client as they came).

By the setting (`agent_action`), a stuck agent is observed (`loopfix_agent_loops_total` and the
`x-loopfix-agent-loop` response header), stopped (the proxy answers itself with
`finish_reason: "repetition"` and a message naming the loop; the upstream is not called) or
nudged (a system note asking the model to change approach is appended to the messages sent
upstream, gemini-cli's "one warning"). Every action also sets the header and counts the metric.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from loopfix.agents import AgentConfig, AgentVerdict, Step, detect_stuck, openai_steps
from loopfix.agents.normalise import excerpt, normalise_args
from loopfix.serve.protocol import Message

AgentAction = Literal["off", "observe", "stop", "nudge"]
AGENT_ACTIONS: tuple[str, ...] = get_args(AgentAction)
HEADER = "x-loopfix-agent-loop"


def _is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant"


def _fingerprint(message: Any) -> str:
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class _Read:
    """A history read up to `boundary`, an assistant message (steps never straddle one: a
    call's result and a message's reply come before the next assistant turn)."""

    boundary: int
    anchor: str  # the fingerprint of the message before `boundary`
    turns: int  # assistant messages before `boundary`
    steps: list[Step]  # the last `tail_steps` steps before `boundary`
    chars: int  # their text, which the cache's budget counts

    def continued_by(self, messages: list[Any]) -> bool:
        """Whether `messages` still holds what was read (checked at its last message only: a
        conversation id promises that the history only grows)."""
        if len(messages) < self.boundary:
            return False
        return self.boundary == 0 or _fingerprint(messages[self.boundary - 1]) == self.anchor


class Conversations:
    """The steps the proxy has read of each named conversation, so that its next request is
    read from the last assistant turn on; a history that is shorter, or whose message before
    that turn changed, is read afresh. Least recently used conversations are dropped beyond
    `max_chars` of kept step text."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._read: OrderedDict[str, _Read] = OrderedDict()
        self._chars = 0

    def conversations(self) -> list[str]:
        """The ids kept, least recently used first."""
        return list(self._read)

    def steps(
        self, messages: list[Any], config: AgentConfig, conversation: str | None
    ) -> list[Step]:
        """The last `tail_steps` steps of `messages` (ValueError for a bad field)."""
        known = self._read.pop(conversation, None) if conversation is not None else None
        if known is not None:
            self._chars -= known.chars
        if known is None or not known.continued_by(messages):
            start = max(0, len(messages) - 2 * config.tail_steps)
            # turns count in the whole history, so that a verdict's onset is the agent's own
            known = _Read(start, "", sum(map(_is_assistant, messages[:start])), [], 0)
        unread = range(len(messages) - 1, known.boundary - 1, -1)
        last = next((i for i in unread if _is_assistant(messages[i])), known.boundary)
        done = openai_steps(messages[known.boundary : last], known.turns)
        turns = known.turns + sum(map(_is_assistant, messages[known.boundary : last]))
        read = (known.steps + done)[-config.tail_steps :]
        if conversation is not None and self.max_chars > 0:
            anchor = _fingerprint(messages[last - 1]) if last else ""
            chars = sum(len(step.args) + len(step.result or "") for step in read)
            self._read[conversation] = _Read(last, anchor, turns, read, chars)
            self._chars += chars
            while self._chars > self.max_chars and self._read:
                self._chars -= self._read.popitem(last=False)[1].chars
        return (read + openai_steps(messages[last:], turns))[-config.tail_steps :]


def stuck_agent(
    messages: Any,
    config: AgentConfig,
    conversations: Conversations | None = None,
    conversation: str | None = None,
) -> AgentVerdict | None:
    """The loop the agent is in at the end of `messages`, or None (also for a history that is
    no list of messages: the upstream judges a malformed request)."""
    if not isinstance(messages, list):
        return None
    try:
        steps = (conversations or Conversations(0)).steps(messages, config, conversation)
    except (ValueError, RecursionError):  # a bad field, or arguments nested past reading
        return None
    verdict = detect_stuck(steps, config, ongoing_only=True)
    return verdict if verdict.stuck else None


def repeated_call(calls: Iterable[tuple[str, str]], config: AgentConfig) -> AgentVerdict | None:
    """The call (name, arguments) one answer makes `identical_repeats` times or more, or None."""
    counts = Counter((name, normalise_args(arguments)) for name, arguments in calls)
    if not counts:
        return None
    (name, arguments), copies = counts.most_common(1)[0]
    if copies < config.identical_repeats:
        return None
    unit = (f"{name}({excerpt(arguments)}) in one answer",)
    return AgentVerdict(stuck=True, kind="identical-calls", repeats=copies, unit=unit, ongoing=True)


def header_value(verdict: AgentVerdict) -> str:
    """`KIND; onset_turn=N; repeats=R`, or `KIND; in_answer; repeats=R` for calls repeated
    inside one answer (no turn: the answer is the turn being made)."""
    where = "in_answer" if verdict.onset_turn is None else f"onset_turn={verdict.onset_turn}"
    return f"{verdict.kind}; {where}; repeats={verdict.repeats}"


def explanation(verdict: AgentVerdict) -> str:
    """What the agent keeps doing, in words the model (nudge) and the harness (stop) read."""
    unit = " then ".join(verdict.unit)
    return (
        f"The agent is stuck in a loop ({verdict.kind}): since turn {verdict.onset_turn} it has "
        f"repeated {unit} ({verdict.repeats} times) without making progress."
    )


def nudge_message(verdict: AgentVerdict) -> Message:
    note = " Do not repeat it again: change your approach or explain what blocks you."
    return {"role": "system", "content": explanation(verdict) + note}


def _completion_id() -> str:
    return f"chatcmpl-loopfix-{secrets.token_hex(8)}"


def stopped_answer(body: dict[str, Any], verdict: AgentVerdict) -> dict[str, Any]:
    """The chat completion the proxy answers with instead of calling the upstream."""
    return {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": explanation(verdict)},
                "finish_reason": "repetition",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def stopped_events(body: dict[str, Any], verdict: AgentVerdict) -> list[str]:
    """The same answer as server-sent events, `[DONE]` last."""
    head = {
        "id": _completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", ""),
    }
    delta = {"role": "assistant", "content": explanation(verdict)}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "repetition"}]},
    ]
    return [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
