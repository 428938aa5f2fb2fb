"""The proxy's agent check (docs/agents.md): before a chat request goes upstream, its
`messages` are read as an agent trajectory and checked for an agent stuck now (a run of the
stuck rule that reaches the last step). The cost is bounded: only the last `2 x tail_steps`
messages are read into steps (a step takes at least one message: a tool result, or a message
and its reply), and only the last `tail_steps` steps are judged.

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

import json
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal, get_args

from loopfix.agents import AgentConfig, AgentVerdict, detect_stuck, openai_steps
from loopfix.agents.normalise import excerpt, normalise_args
from loopfix.serve.protocol import Message

AgentAction = Literal["off", "observe", "stop", "nudge"]
AGENT_ACTIONS: tuple[str, ...] = get_args(AgentAction)
HEADER = "x-loopfix-agent-loop"


def stuck_agent(messages: Any, config: AgentConfig) -> AgentVerdict | None:
    """The loop the agent is in at the end of `messages`, or None (also for a history that is
    no list of messages: the upstream judges a malformed request)."""
    if not isinstance(messages, list):
        return None
    start = max(0, len(messages) - 2 * config.tail_steps)
    # turns are counted in the whole history, so the onset a verdict names is the agent's own
    before = sum(
        1 for m in messages[:start] if isinstance(m, dict) and m.get("role") == "assistant"
    )
    try:
        steps = openai_steps(messages[start:], turns_before=before)
    except (ValueError, RecursionError):  # a bad field, or arguments nested past reading
        return None
    verdict = detect_stuck(steps[-config.tail_steps :], config, ongoing_only=True)
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
