"""loopfix's LiteLLM guardrail in a real LiteLLM proxy (`litellm --config`, from .venv-litellm)
in front of the scripted upstream, with the official `openai` SDK as the client: looping
streams are stopped with finish_reason "repetition", clean answers and legitimate repetition
come through unchanged, observe changes nothing, and the metrics count what happened.

One proxy per module (it takes about 10 s to start); each request picks its guardrail with
LiteLLM's per-request `guardrails` field, and a request that names none is the baseline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopfix.serve import ServeConfig
from tests.serve.proxy import metric, running_proxy
from tests.serve.scripted_upstream import (
    ANSWER,
    CONTINUATION,
    INTRO,
    LOOP_UNIT,
    ScriptedUpstream,
)

from .litellm_proxy import (
    MASTER_KEY,
    NEEDS_LITELLM,
    free_port,
    guardrail,
    litellm_proxy,
    proxy_config,
    served_model,
)

openai = pytest.importorskip("openai")
pytestmark = NEEDS_LITELLM

STOP, OBSERVE = "loopfix-stop", "loopfix-observe"
FIRST_COPY = INTRO + LOOP_UNIT  # what a stopped loop leaves: the text before the repeat
LOOP_WORDS = len((INTRO + LOOP_UNIT * 150).split())  # the looping script, to its end


class Served:
    def __init__(self, url: str, upstream: ScriptedUpstream, metrics: dict[str, str], log: Path):
        self.client = openai.OpenAI(base_url=url + "/v1", api_key=MASTER_KEY, max_retries=0)
        self.upstream = upstream
        self.metrics = metrics  # guardrail name -> its /metrics URL
        self.log = log
        self.usage: Any = None  # the last stream's usage, if it sent one

    def stream(self, model: str, guard: str | None, **extra: Any) -> list[tuple[str, str, str]]:
        """(content, reasoning, finish_reason) of each chunk of choice 0, in order."""
        body = {"guardrails": [guard] if guard else [], **extra.pop("extra_body", {})}
        chunks = self.client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            extra_body=body,
            **extra,
        )
        seen = []
        self.usage = None
        for chunk in chunks:
            self.usage = chunk.usage or self.usage
            for choice in chunk.choices:
                reasoning = getattr(choice.delta, "reasoning_content", None) or ""
                seen.append((choice.delta.content or "", reasoning, choice.finish_reason or ""))
        return seen

    def answer(self, model: str, guard: str | None) -> Any:
        """A non-streamed answer (the scripted upstream answers JSON when asked to)."""
        return self.client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={"guardrails": [guard] if guard else [], "json_answer": True},
        )

    def metric(self, guard: str, name: str, **labels: str) -> float:
        return metric(httpx.get(self.metrics[guard]).text, name, **labels)


def joined(chunks: list[tuple[str, str, str]]) -> tuple[str, str, list[str]]:
    content = "".join(chunk[0] for chunk in chunks)
    reasoning = "".join(chunk[1] for chunk in chunks)
    return content, reasoning, [chunk[2] for chunk in chunks if chunk[2]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("litellm")
    ports = {STOP: free_port(), OBSERVE: free_port()}
    guardrails = [
        guardrail(STOP, on_loop="stop", metrics_port=ports[STOP]),
        guardrail(OBSERVE, on_loop="observe", metrics_port=ports[OBSERVE]),
        guardrail("loopfix-bad", on_loop="rescue"),  # refused: its error goes to the log
    ]
    with ScriptedUpstream() as upstream, running_proxy(ServeConfig(upstream=upstream.url)) as serve:
        # `serve-loop`: LiteLLM -> loopfix serve -> the upstream, for what a hook cannot do
        config = proxy_config(upstream.url, guardrails, [served_model("serve-loop", "loop", serve)])
        with litellm_proxy(config, folder) as proxy:
            metrics = {name: f"http://127.0.0.1:{port}/metrics" for name, port in ports.items()}
            yield Served(proxy.url, upstream, metrics, folder / "proxy.log")


def test_a_looping_stream_is_stopped_after_its_first_copy(served: Served) -> None:
    before = served.metric(
        STOP, "loopfix_loops_detected_total", kind="verbatim", part="content", action="stop"
    )
    chunks = served.stream("loop", STOP, stream_options={"include_usage": True})
    content, reasoning, finishes = joined(chunks)
    assert content == FIRST_COPY and not reasoning
    assert finishes == ["repetition"]  # not LiteLLM's "stop" for a reason it does not know
    record = served.upstream.last()
    assert record.finished.wait(10)  # the upstream request was closed: it stopped generating
    assert record.chunks < LOOP_WORDS / 4, record.chunks
    # The usage the client asked for: the upstream's events until it was closed (one token
    # each on vLLM); its prompt tokens were never reported, the stream having been cut.
    assert served.usage is not None and 0 < served.usage.completion_tokens <= record.chunks
    after = served.metric(
        STOP, "loopfix_loops_detected_total", kind="verbatim", part="content", action="stop"
    )
    assert after == before + 1


def test_a_loop_in_the_reasoning_is_stopped_too(served: Served) -> None:
    content, reasoning, finishes = joined(served.stream("think-loop", STOP))
    assert reasoning == FIRST_COPY and content == ""
    assert finishes == ["repetition"]


@pytest.mark.parametrize("model", ["clean", "table", "list"])
def test_clean_answers_and_legitimate_repetition_come_through_unchanged(
    served: Served, model: str
) -> None:
    plain = served.stream(model, None)
    assert joined(served.stream(model, STOP)) == joined(plain)  # same text, same finish
    assert served.stream(model, OBSERVE) == plain  # observe: chunk for chunk
    guarded, unguarded = served.answer(model, STOP), served.answer(model, None)
    assert [c.model_dump() for c in guarded.choices] == [c.model_dump() for c in unguarded.choices]
    assert guarded.usage == unguarded.usage


def test_observe_passes_a_loop_untouched_and_counts_it(served: Served) -> None:
    labels = {"kind": "verbatim", "part": "content", "action": "observe"}
    before = served.metric(OBSERVE, "loopfix_loops_detected_total", **labels)
    assert served.stream("loop", OBSERVE) == served.stream("loop", None)
    assert served.metric(OBSERVE, "loopfix_loops_detected_total", **labels) == before + 1


def test_a_non_streamed_loop_is_cut_after_its_first_copy(served: Served) -> None:
    looping = served.answer("loop", STOP).choices[0]
    assert looping.message.content == FIRST_COPY and looping.finish_reason == "repetition"
    plain = served.answer("loop", None).choices[0]
    assert (
        plain.message.content.startswith(FIRST_COPY + LOOP_UNIT) and plain.finish_reason == "length"
    )
    clean = served.answer("clean", STOP).choices[0]
    assert clean.message.content == ANSWER and clean.finish_reason == "stop"


def test_a_guardrail_with_an_action_it_cannot_take_is_refused_in_one_line(served: Served) -> None:
    log = served.log.read_text()
    assert "loopfix guardrail: on_loop must be one of observe, stop, got 'rescue'" in log


def test_the_upstreams_own_repetition_survives_in_a_non_streamed_answer(served: Served) -> None:
    # vLLM's repetition_detection ends an answer with "repetition"; LiteLLM maps it to "stop"
    # and keeps the original as native_finish_reason, which the guardrail restores.
    assert served.answer("repetition", None).choices[0].finish_reason == "stop"
    guarded = served.answer("repetition", STOP).choices[0]
    assert guarded.finish_reason == "repetition" and guarded.message.content == INTRO
    # In a stream LiteLLM drops it before any hook runs: documented, not fixable from a hook.
    assert joined(served.stream("repetition", STOP))[2] == ["stop"]


def test_rescue_through_litellm_runs_in_loopfix_serve_behind_it(served: Served) -> None:
    # The guardrail cannot continue an answer; `loopfix serve` between LiteLLM and the model
    # server can, and LiteLLM passes the request's `loopfix` field on to it.
    rescue = {"loopfix": {"action": "rescue"}}
    content, _, finishes = joined(served.stream("serve-loop", None, extra_body=rescue))
    assert content == FIRST_COPY + CONTINUATION and finishes == ["stop"]


def test_a_text_completion_passes_unwatched(served: Served) -> None:
    def text(guard: str | None) -> tuple[str, list[str]]:
        chunks = served.client.completions.create(
            model="loop",
            prompt="go",
            stream=True,
            extra_body={"guardrails": [guard] if guard else []},
        )
        pieces = [(c.choices[0].text, c.choices[0].finish_reason) for c in chunks if c.choices]
        return "".join(p or "" for p, _ in pieces), [f for _, f in pieces if f]

    # The guardrail watches chat completions only (docs/integrations.md, Limits).
    assert text(STOP) == text(None)
