"""The think-escape through vLLM, on the thinker (issue 52, point 2; docs/thinking.md): a real
`vllm serve` of `loopfix:smollm2-think` on 127.0.0.1 with a reasoning parser on (`olmo3` reads
`<think>` spelled in several tokens, as SmolLM2 spells it) and loopfix's logits processor, the
official `openai` SDK as the client. On two held-out prompts the thinker circles on at greedy
until the limit, and the answer straight from vLLM has none. Asked for the escape through the
processor (`vllm_xargs`), or through `loopfix serve --action think-escape` in front of the
server (streamed and not), the thought is ended where the loop is found and the answer given,
with a finish reason and usage that say so. bench/think_exits.py --backend vllm and
bench/think_exits_served.py run all 120 prompts."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from openai import OpenAI

from loopfix.models import resolve_model_path
from loopfix.serve import ServeConfig
from loopfix.suites.think import check_think, think_item
from loopfix.suites.think_judge import judge_steps
from tests.vllm_server import NEEDS_VLLM, vllm_server

from .proxy import metric_total, running_proxy
from .sdk_answers import ask

pytestmark = [*NEEDS_VLLM, pytest.mark.slow]

LOOPING = [think_item(100, 24), think_item(100, 108)]
"""Held-out items (seed 100) on which the thinker loops inside its thinking at greedy."""
MAX_TOKENS = 384
PROCESSOR = "loopfix.guards.vllm:LoopfixLogitsProcessor"
ESCAPE = {"vllm_xargs": {"loopfix_guards": "rescue", "rescue.escape": "think_end"}}


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = resolve_model_path("loopfix:smollm2-think")
    log = tmp_path_factory.mktemp("vllm-think") / "vllm.log"
    options = ["--max-model-len", "1024", "--served-model-name", "thinker"]
    options += ["--reasoning-parser", "olmo3", "--logits-processors", PROCESSOR]
    with vllm_server(folder, log, options=options) as url:
        yield url


@pytest.fixture(scope="module")
def proxy(vllm: str) -> Iterator[str]:
    config = ServeConfig(
        upstream=vllm, action="think-escape", think_start="<think>", think_end="\n</think>\n"
    )
    with running_proxy(config) as url:
        yield url


@pytest.fixture(scope="module")
def answered(vllm: str, proxy: str) -> dict[str, object]:
    """Every answer at once (vLLM batches them): straight from vLLM, and through the proxy
    streamed and not; with the proxy's count of finished escapes before and after."""
    before = metric_total(proxy, "loopfix_rescues_total", outcome="finished")
    settings = {"model": "thinker", "max_tokens": MAX_TOKENS, "temperature": 0.0}
    ways = {
        "direct": (vllm, False, {}),
        "processor": (vllm, False, ESCAPE),
        "plain": (proxy, False, {}),
        "streamed": (proxy, True, {}),
    }
    with ThreadPoolExecutor(len(ways) * len(LOOPING)) as pool:
        asked = {
            name: [
                pool.submit(ask, OpenAI(base_url=url + "/v1", api_key="none", timeout=300),
                            item.messages, stream, **settings, extra_body=extra)
                for item in LOOPING
            ]
            for name, (url, stream, extra) in ways.items()
        }  # fmt: skip
        answers = {name: [future.result() for future in row] for name, row in asked.items()}
    escapes = metric_total(proxy, "loopfix_rescues_total", outcome="finished") - before
    return {**answers, "escapes": escapes}


def test_straight_from_vllm_the_thinker_loops_to_the_limit_without_an_answer(
    answered: dict,
) -> None:
    for item, answer in zip(LOOPING, answered["direct"], strict=True):
        assert answer.finish_reason == "length" and answer.completion_tokens == MAX_TOKENS
        assert judge_steps(answer.text).label != "clean", answer.text
        assert not check_think(answer.text, item.answer, item.meta, False)


def test_vllms_processor_forces_the_end_of_thinking_and_the_answer_comes(answered: dict) -> None:
    for item, answer in zip(LOOPING, answered["processor"], strict=True):
        assert answer.finish_reason == "stop" and answer.completion_tokens < MAX_TOKENS
        assert check_think(answer.text, item.answer, item.meta, True), answer.text


def test_through_the_proxy_the_thought_ends_and_the_answer_comes(answered: dict) -> None:
    plain, streamed = answered["plain"], answered["streamed"]
    for item, answer, other in zip(LOOPING, plain, streamed, strict=True):
        assert answer == other  # greedy: streamed and not, the same answer and usage
        assert answer.reasoning  # the thought, up to where the loop was found
        assert answer.finish_reason == "stop"
        assert answer.completion_tokens is not None and answer.completion_tokens < MAX_TOKENS
        assert check_think(answer.text, item.answer, item.meta, True), answer.text
    assert answered["escapes"] == 4
