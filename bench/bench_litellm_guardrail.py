"""What does loopfix's LiteLLM guardrail cost per chunk? Three real LiteLLM proxies (from
.venv-litellm) in front of one scripted upstream (tests/serve/scripted_upstream.py, one word per
chunk): one without the guardrail, one with it under observe, one under stop (holdback 64), all
`default_on`. The same traffic goes to each, in rounds that rotate which proxy goes first:
--clients concurrent streams of clean answers (a 40-row table and a 100-item list, about 400
chunks each, nothing loops, so every chunk is watched and passed on).

Per proxy: chunks the clients received, the proxy process's CPU time per chunk (user + system,
psutil, children included), and the clients' wall time per chunk. The guardrail's cost is the
difference to the proxy without it, measured in the same run on the same machine.

    PYTHONPATH=src .venv/bin/python bench/bench_litellm_guardrail.py [--clients 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted upstream and the LiteLLM runner of the tests

from tests.integrations.litellm_proxy import (  # noqa: E402
    LITELLM,
    MASTER_KEY,
    RunningProxy,
    guardrail,
    litellm_proxy,
    proxy_config,
)
from tests.serve.scripted_upstream import ScriptedUpstream  # noqa: E402

MODELS = ("table", "list")  # long clean answers: watched to the end, never stopped
# A guardrail that only passes chunks on: what LiteLLM itself spends once any streaming
# guardrail is active (its per-chunk hooks replace its fast path), apart from loopfix's watch.
NOOP = """
from litellm.integrations.custom_guardrail import CustomGuardrail

class PassThrough(CustomGuardrail):
    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict, response, request_data
    ):
        async for item in response:
            yield item
"""


def cpu_seconds(pid: int) -> float:
    process = psutil.Process(pid)
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        times = each.cpu_times()
        total += times.user + times.system
    return total


async def stream(client: httpx.AsyncClient, url: str, model: str) -> tuple[int, str]:
    """Chunks received and the text of one streamed chat completion."""
    body = {"model": model, "messages": [{"role": "user", "content": "go"}], "stream": True}
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    chunks, text = 0, ""
    async with client.stream(
        "POST", url + "/v1/chat/completions", json=body, headers=headers
    ) as reply:
        reply.raise_for_status()
        async for line in reply.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            event = json.loads(line[5:])
            for choice in event.get("choices", []):
                chunks += 1
                text += (choice.get("delta") or {}).get("content") or ""
    return chunks, text


async def load(url: str, clients: int) -> tuple[int, float, list[str]]:
    """--clients concurrent streams: chunks, wall seconds, texts."""
    timeout = httpx.Timeout(120.0)
    async with httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_connections=None)) as c:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(stream(c, url, MODELS[i % len(MODELS)]) for i in range(clients))
        )
        wall = time.perf_counter() - started
    return sum(n for n, _ in results), wall, [text for _, text in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay-s", type=float, default=0.0, help="upstream seconds per chunk")
    args = parser.parse_args()
    if not LITELLM.exists():
        sys.exit("error: no .venv-litellm (bash scripts/setup-litellm.sh)")
    passthrough = {"guardrail": "passthrough.PassThrough", "mode": "post_call", "default_on": True}
    setups = {
        "no guardrail": [],
        "a pass-through guardrail": [{"guardrail_name": "noop", "litellm_params": passthrough}],
        "observe": [guardrail("loopfix", on_loop="observe", default_on=True)],
        "stop": [guardrail("loopfix", on_loop="stop", default_on=True)],
    }
    with ExitStack() as stack:
        upstream = stack.enter_context(ScriptedUpstream(delay_s=args.delay_s))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        proxies: dict[str, RunningProxy] = {}
        for name, guardrails in setups.items():
            (folder / name).mkdir()
            (folder / name / "passthrough.py").write_text(NOOP)  # found beside the config
            config = proxy_config(upstream.url, guardrails)
            proxies[name] = stack.enter_context(litellm_proxy(config, folder / name))
        for proxy in proxies.values():
            asyncio.run(load(proxy.url, 2))  # warm-up: imports, connections
        cpu = {name: 0.0 for name in proxies}
        chunks = {name: 0 for name in proxies}
        walls: dict[str, list[float]] = {name: [] for name in proxies}  # seconds per round
        texts: dict[str, list[str]] = {}
        names = list(proxies)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                proxy = proxies[name]
                before = cpu_seconds(proxy.pid)
                count, wall, texts[name] = asyncio.run(load(proxy.url, args.clients))
                cpu[name] += cpu_seconds(proxy.pid) - before
                chunks[name] += count
                walls[name].append(wall)
    baseline = texts["no guardrail"]
    assert all(each == baseline for each in texts.values()), "a proxy changed a clean answer"
    # Per upstream chunk (the same traffic everywhere): stop's holdback releases held text in
    # fewer, larger chunks, so the chunks a client receives are no common unit.
    sent = chunks["no guardrail"]
    base_cpu = cpu["no guardrail"] / sent
    print(f"{args.clients} concurrent clean streams x {args.rounds} rounds, per proxy")
    print("| proxy | chunks sent / received | proxy CPU per chunk (us) | added (us) |", end="")
    print(" wall per chunk, median of rounds (ms) |")
    print("|---|---:|---:|---:|---:|")
    for name in proxies:
        per_chunk = cpu[name] / sent
        added = "-" if name == "no guardrail" else f"{(per_chunk - base_cpu) * 1e6:+.0f}"
        wall = statistics.median(walls[name]) * 1e3 * args.rounds / sent
        print(
            f"| {name} | {sent} / {chunks[name]} | {per_chunk * 1e6:.0f} | {added} | {wall:.2f} |"
        )


if __name__ == "__main__":
    main()
