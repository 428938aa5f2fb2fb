"""Property tests of how the proxy reads upstream events (issue 56), through the real chain with
no HTTP around it: `UpstreamStream` (its lines, cut anywhere, and `event_problem`), `Exchange`
(observe and stop) and `assemble`. Events are arbitrary JSON with huge integers and junk of
every type where the proxy reads a field. Nothing escapes but the proxy's own UpstreamError (a
502 naming the upstream's fault), no structure grows past its bound, and every answer is
well-formed JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from loopfix.serve.assemble import assemble
from loopfix.serve.choice import Policy
from loopfix.serve.config import ServeConfig
from loopfix.serve.exchange import Exchange
from loopfix.serve.metrics import ServeMetrics
from loopfix.serve.protocol import CHAT_PATH, MAX_EVENT_BYTES, MAX_TOOL_CALLS
from loopfix.serve.upstream import UpstreamError, UpstreamStream, event_problem

# Indexes at and around every bound, and far past them (a list grown to 2**63 never ends).
INDEXES = st.integers(0, 2) | st.sampled_from([-1, MAX_TOOL_CALLS - 1, MAX_TOOL_CALLS, 2**63])
SCALARS = (
    st.none()
    | st.booleans()
    | INDEXES
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
JUNK = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def mostly(
    valid: st.SearchStrategy[Any], other: st.SearchStrategy[Any] = JUNK
) -> st.SearchStrategy[Any]:
    """`valid`, one time in 16 `other`: most events get through the check, so deep."""
    return st.integers(0, 15).flatmap(lambda pick: other if pick == 15 else valid)


def shaped(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An object with any of `fields`, or junk instead."""
    return mostly(st.fixed_dictionaries({}, optional=fields))


TEXT = mostly(st.text(max_size=12))


FUNCTION = shaped(name=TEXT, arguments=TEXT)
INDEX = mostly(st.integers(0, 2), INDEXES | JUNK)
TOOL_CALL = mostly(
    st.fixed_dictionaries(
        {"index": INDEX}, optional={"id": TEXT, "type": TEXT, "function": FUNCTION}
    )
)
DELTA = shaped(
    role=TEXT, content=TEXT, reasoning_content=TEXT, tool_calls=st.lists(TOOL_CALL, max_size=3)
)
LOGPROBS = st.none() | st.dictionaries(st.sampled_from(["content", "tokens"]), JUNK, max_size=2)
FINISH = st.sampled_from([None, None, "stop", "length"])
CHOICE = shaped(
    index=INDEX,
    delta=DELTA,
    text=TEXT,
    logprobs=mostly(LOGPROBS),
    finish_reason=mostly(FINISH),
)
EVENT = mostly(
    st.fixed_dictionaries(
        {"choices": mostly(st.lists(CHOICE, min_size=1, max_size=3))},
        optional={"id": JUNK, "usage": shaped(prompt_tokens=INDEXES)},
    )
)
LINE = mostly(EVENT.map(lambda event: "data: " + json.dumps(event)), st.text())


async def _pieces(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in sorted(cuts) + [len(data)]:
        yield data[start:cut]
        start = cut


def answer(data: bytes, cuts: list[int], chat: bool, action: str, n: int) -> Any:
    """The assembled answer to a request for `n` choices whose upstream sent `data` (read in
    pieces cut at `cuts`), or the UpstreamError it failed with."""
    metrics = ServeMetrics()
    path = CHAT_PATH if chat else "/v1/completions"
    policy = Policy(action, max_rescues=1, holdback_tokens=2)
    exchange = Exchange(path, {"n": n}, policy, ServeConfig(upstream="http://x"), None, metrics)  # type: ignore[arg-type]
    response = httpx.Response(200, content=_pieces(data, cuts))
    exchange.stream = UpstreamStream(response, metrics, len(exchange.choices))

    async def chunks() -> list[Any]:
        return [chunk async for chunk, _ in exchange.chunks()]

    try:
        result = assemble(asyncio.run(chunks()), chat)
    except UpstreamError as error:
        assert error.status == 502 and error.message.startswith(("upstream", "the upstream"))
        return error
    assert [choice.index for choice in exchange.choices] == list(range(n))
    return result


@settings(max_examples=200, deadline=None)
@given(
    st.lists(LINE, max_size=5),
    st.data(),
    st.booleans(),
    st.sampled_from(["observe", "stop"]),
    mostly(st.just(3), st.integers(1, 2)),  # choices asked for: the upstream's indexes are 0-2
)
def test_any_events_give_a_bounded_well_formed_answer_or_a_502(
    lines: list[str], data: st.DataObject, chat: bool, action: str, n: int
) -> None:
    raw = "".join(line + "\n\n" for line in lines).encode() + b"data: [DONE]\n\n"
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=4))
    result = answer(raw, cuts, chat, action, n)
    if isinstance(result, UpstreamError):
        return
    json.dumps(result, allow_nan=False)  # well-formed: no NaN, no Infinity
    assert [choice["index"] for choice in result["choices"]] == sorted(
        {choice["index"] for choice in result["choices"]}
    )
    for choice in result["choices"]:
        assert 0 <= choice["index"] < n
        message = choice.get("message", {})
        assert isinstance(message.get("content", choice.get("text", "")) or "", str)
        calls = message.get("tool_calls", [])
        assert len(calls) <= MAX_TOOL_CALLS
        for call in calls:
            assert all(isinstance(call["function"][key], str) for key in ("name", "arguments"))


@settings(max_examples=300, deadline=None)
@given(JUNK | EVENT, st.integers(1, 3))
def test_the_event_check_names_a_problem_or_lets_only_bounded_events_through(
    event: Any, n: int
) -> None:
    problem = event_problem(event, n)
    if problem is not None:
        assert isinstance(problem, str)
        return
    for choice in event.get("choices") or []:
        assert 0 <= choice.get("index", 0) < n
        for call in (choice.get("delta") or {}).get("tool_calls") or []:
            assert 0 <= call["index"] < MAX_TOOL_CALLS


def test_a_line_that_never_ends_is_a_502_once_it_passes_the_bound() -> None:
    line = b"data: " + b"x" * MAX_EVENT_BYTES
    error = answer(line, [MAX_EVENT_BYTES // 2], True, "observe", 1)
    assert isinstance(error, UpstreamError)
    assert f"longer than {MAX_EVENT_BYTES} bytes" in error.message


def test_lines_split_anywhere_read_as_the_whole_lines() -> None:
    event = {"choices": [{"index": 0, "delta": {"content": "héllo"}, "finish_reason": "stop"}]}
    raw = f"data: {json.dumps(event, ensure_ascii=False)}\r\n\r\ndata: [DONE]\r\n".encode()
    for cut in range(len(raw)):
        result = answer(raw, [cut], True, "stop", 1)
        assert result["choices"][0]["message"]["content"] == "héllo", cut
