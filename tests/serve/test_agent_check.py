"""The proxy's agent check end to end (docs/agents.md): a scripted agent sends its growing
history through a real proxy to the scripted upstream on 127.0.0.1, turn by turn, as a
harness does. A stuck agent is caught at the turn its loop qualifies (observed, stopped or
nudged); a polling agent, whose calls repeat while their results change, is never touched."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import loopfix.serve
from loopfix.agents import AgentConfig
from loopfix.cli import app
from loopfix.serve import ServeConfig
from loopfix.serve.agent_check import HEADER, Conversations

from .proxy import finish_reasons, metric_total, running_proxy, stream_events, texts
from .scripted_upstream import ANSWER, ScriptedUpstream

CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def proxy(upstream: ScriptedUpstream) -> Iterator[str]:
    with running_proxy(ServeConfig(upstream=upstream.url)) as url:  # agent_action: observe
        yield url


class ScriptedAgent:
    """An agent whose tool calls and their results are scripted; each turn it sends its whole
    history through the proxy, as an OpenAI-compatible harness does."""

    def __init__(
        self, proxy: str, action: str | None = None, conversation: str | None = None
    ) -> None:
        self.url, self.action, self.conversation = proxy + CHAT, action, conversation
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Make the CI build pass."},
        ]

    def act(self, command: str, result: str) -> None:
        call_id = f"call_{len(self.messages)}"
        function = {"name": "bash", "arguments": json.dumps({"command": command})}
        call = {"id": call_id, "type": "function", "function": function}
        self.messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": result})

    def body(self, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"model": "clean", "messages": self.messages, **extra}
        options = {"agent_action": self.action, "conversation": self.conversation}
        if any(value is not None for value in options.values()):
            body["loopfix"] = {key: value for key, value in options.items() if value is not None}
        return body

    def send(self) -> httpx.Response:
        reply = httpx.post(self.url, json=self.body(), timeout=30)
        assert reply.status_code == 200, reply.text
        return reply


FAILING = "FAILED tests/test_build.py::test_config - KeyError: 'REGION'"


@pytest.mark.parametrize("conversation", [None, "run-1"])
def test_a_stuck_agent_is_stopped_at_the_turn_its_loop_qualifies(
    proxy: str, upstream: ScriptedUpstream, conversation: str | None
) -> None:
    agent = ScriptedAgent(proxy, action="stop", conversation=conversation)
    agent.act("ls", "src tests setup.cfg")
    for turn in range(2, 5):  # three identical calls: not yet a loop
        agent.act("pytest tests/test_build.py", FAILING)
        reply = agent.send()
        assert reply.json()["choices"][0]["message"]["content"] == ANSWER, turn
        assert HEADER not in reply.headers
    sent = len(upstream.records)
    agent.act("pytest tests/test_build.py", FAILING)  # the fourth
    reply = agent.send()
    assert len(upstream.records) == sent  # answered by the proxy, the upstream never called
    choice = reply.json()["choices"][0]
    assert choice["finish_reason"] == "repetition"
    assert (
        "identical-calls" in choice["message"]["content"]
        and "since turn 2" in choice["message"]["content"]
    )
    assert reply.headers[HEADER] == "identical-calls; onset_turn=2; repeats=4"
    assert metric_total(proxy, "loopfix_agent_loops_total", kind="identical-calls", action="stop")


def test_a_stuck_agent_streaming_gets_a_stream_that_ends_with_repetition(proxy: str) -> None:
    agent = ScriptedAgent(proxy, action="stop")
    for _ in range(4):
        agent.act("pytest tests/test_build.py", FAILING)
    events = stream_events(agent.url, agent.body())
    assert finish_reasons(events) == ["repetition"]
    assert "stuck in a loop (identical-calls)" in texts(events)


def test_observe_answers_from_the_upstream_untouched_with_a_header(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    agent = ScriptedAgent(proxy)
    for _ in range(5):
        agent.act("cat config.yaml", "region: unset\nzone: unset")
    reply = agent.send()
    assert reply.json()["choices"][0]["message"]["content"] == ANSWER
    assert reply.headers[HEADER] == "identical-calls; onset_turn=1; repeats=5"
    assert upstream.last(CHAT).body["messages"] == agent.messages


def test_nudge_appends_a_system_note_naming_the_loop(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    agent = ScriptedAgent(proxy, action="nudge")
    agent.act("ls", "src tests setup.cfg")
    for _ in range(4):
        agent.act("pytest tests/test_build.py", FAILING)
    reply = agent.send()
    assert reply.json()["choices"][0]["message"]["content"] == ANSWER
    forwarded = upstream.last(CHAT).body["messages"]
    assert forwarded[:-1] == agent.messages
    note = forwarded[-1]
    assert note["role"] == "system" and "pytest tests/test_build.py" in note["content"]
    assert "change your approach" in note["content"]


@pytest.mark.parametrize("conversation", [None, "poll-1"])
def test_a_polling_agent_is_never_touched(
    proxy: str, upstream: ScriptedUpstream, conversation: str | None
) -> None:
    agent = ScriptedAgent(proxy, action="stop", conversation=conversation)
    for percent in range(0, 100, 10):
        agent.act(
            "gh run view 4711 --json status", f'{{"status": "in_progress", "done": {percent}}}'
        )
        reply = agent.send()
        assert reply.json()["choices"][0]["message"]["content"] == ANSWER
        assert HEADER not in reply.headers
        assert upstream.last(CHAT).body["messages"] == agent.messages
    for seconds in (5, 10, 20, 40):  # a wait with back-off whose answer does not change
        agent.act(f"sleep {seconds} && kubectl rollout status web", "Waiting for rollout to finish")
        assert HEADER not in agent.send().headers


def test_a_conversation_id_reused_for_another_history_reads_it_afresh(proxy: str) -> None:
    stuck = ScriptedAgent(proxy, action="stop", conversation="reused")
    for _ in range(4):
        stuck.act("pytest tests/test_build.py", FAILING)
    assert stuck.send().json()["choices"][0]["finish_reason"] == "repetition"
    fresh = ScriptedAgent(proxy, action="stop", conversation="reused")
    fresh.act("pytest tests/test_build.py", FAILING)  # a new run: one failure, not five
    assert HEADER not in fresh.send().headers


def test_off_skips_the_check(proxy: str) -> None:
    agent = ScriptedAgent(proxy, action="off")
    for _ in range(6):
        agent.act("pytest tests/test_build.py", FAILING)
    reply = agent.send()
    assert HEADER not in reply.headers and reply.json()["choices"][0]["finish_reason"] == "stop"


def test_a_history_that_is_no_trajectory_goes_upstream_unchecked(
    proxy: str, upstream: ScriptedUpstream
) -> None:
    agent = ScriptedAgent(proxy, action="stop")
    for _ in range(5):
        agent.act("pytest tests/test_build.py", FAILING)
    agent.messages[2]["tool_calls"][0]["function"]["arguments"] = "[" * 5000 + "]" * 5000
    # read as text, the odd arguments still answer the same: a run from turn 1
    assert agent.send().headers[HEADER] == "same-result; onset_turn=1; repeats=5"
    agent.messages[4]["tool_calls"][0]["function"] = "pytest"  # a call that is no object
    reply = agent.send()
    assert reply.json()["choices"][0]["message"]["content"] == ANSWER
    assert HEADER not in reply.headers
    assert upstream.last(CHAT).body["messages"] == agent.messages


def test_a_bad_agent_action_is_a_400_naming_the_field(proxy: str) -> None:
    body = ScriptedAgent(proxy).body(loopfix={"agent_action": "halt"})
    reply = httpx.post(proxy + CHAT, json=body, timeout=30)
    assert reply.status_code == 400 and "loopfix.agent_action" in reply.json()["error"]["message"]


def test_the_serve_flag_sets_the_action_the_proxy_takes(
    monkeypatch: pytest.MonkeyPatch, upstream: ScriptedUpstream
) -> None:
    """`loopfix serve --agent-action stop`: a request that names no action is stopped."""
    replies: list[httpx.Response] = []

    def serve_and_send(config: ServeConfig) -> None:
        with running_proxy(config) as url:
            agent = ScriptedAgent(url)
            for _ in range(4):
                agent.act("pytest tests/test_build.py", FAILING)
            replies.append(agent.send())

    monkeypatch.setattr(loopfix.serve, "run", serve_and_send)
    flags = ["serve", "--upstream", upstream.url, "--agent-action", "stop"]
    result = CliRunner().invoke(app, flags)
    assert result.exit_code == 0, result.output
    (reply,) = replies
    assert reply.json()["choices"][0]["finish_reason"] == "repetition"
    assert reply.headers[HEADER] == "identical-calls; onset_turn=1; repeats=4"


def test_a_bad_agent_action_flag_is_one_line_naming_the_field(upstream: ScriptedUpstream) -> None:
    result = CliRunner().invoke(
        app, ["serve", "--upstream", upstream.url, "--agent-action", "halt"]
    )
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "agent_action" in lines[0], lines


def tool_call_events(commands: list[str]) -> list[str]:
    """An answer streamed as vLLM streams tool calls: each call's name first, then its
    arguments in two pieces, then finish_reason "tool_calls"."""
    head = {"id": "cmpl-tools", "object": "chat.completion.chunk", "created": 1, "model": "clean"}
    events = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for index, command in enumerate(commands):
        arguments = json.dumps({"command": command})
        pieces = [
            {
                "index": index,
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": "bash"},
            },
            {"index": index, "function": {"arguments": arguments[:5]}},
            {"index": index, "function": {"arguments": arguments[5:]}},
        ]
        events += [
            {**head, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]}
            for piece in pieces
        ]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return [json.dumps(event) for event in events]


def test_one_answer_repeating_a_tool_call_is_counted_and_named(proxy: str) -> None:
    agent = ScriptedAgent(proxy)
    before = metric_total(proxy, "loopfix_agent_loops_total", where="answer")
    repeated = tool_call_events(["cat setup.cfg"] * 5 + ["ls"])
    reply = httpx.post(agent.url, json=agent.body(raw_events=repeated), timeout=30)
    assert reply.headers[HEADER] == "identical-calls; in_answer; repeats=5"
    calls = reply.json()["choices"][0]["message"]["tool_calls"]
    assert len(calls) == 6  # passed on whole: the check only observes an answer
    events = stream_events(agent.url, agent.body(raw_events=repeated))
    assert finish_reasons(events) == ["tool_calls"]
    assert metric_total(proxy, "loopfix_agent_loops_total", where="answer") == before + 2


def test_one_answer_with_different_tool_calls_is_not(proxy: str) -> None:
    agent = ScriptedAgent(proxy)
    parallel = tool_call_events([f"cat src/module_{n}.py" for n in range(6)])
    reply = httpx.post(agent.url, json=agent.body(raw_events=parallel), timeout=30)
    assert HEADER not in reply.headers


REAL_CHAT = (
    Path(__file__).resolve().parents[2]
    / "data/agent_trajectories/items"
    / "mini-swe-agent__deepseek_chat_test_1-100__django__django-11620.json"
)


@pytest.mark.parametrize("tail_steps", [8, 64])
def test_a_conversation_read_turn_by_turn_is_the_tail_read_of_each_request(
    tail_steps: int,
) -> None:
    messages = json.loads(REAL_CHAT.read_text())["messages"]
    config = AgentConfig(tail_steps=tail_steps)
    kept = Conversations(max_chars=10**9)
    for end in range(1, len(messages) + 1):  # every request a harness could send
        history = messages[:end]
        assert kept.steps(history, config, "run") == Conversations(0).steps(history, config, None)
    edited = [*messages[:40], {"role": "user", "content": "start over"}]  # not a continuation
    assert kept.steps(edited, config, "run") == Conversations(0).steps(edited, config, None)


def test_the_memory_of_conversations_is_bounded_by_its_text() -> None:
    messages = json.loads(REAL_CHAT.read_text())["messages"]
    config = AgentConfig()
    one = sum(
        len(s.args) + len(s.result or "") for s in Conversations(0).steps(messages, config, None)
    )
    kept = Conversations(max_chars=int(2.5 * one))
    for name in ("a", "b", "c"):
        kept.steps(messages, config, name)
    assert kept.conversations() == ["b", "c"]  # the least recently used went first
