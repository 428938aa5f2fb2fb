"""What does the holdback cost and buy? The proxy (in this process) in front of the scripted
upstream (tests/serve/scripted_upstream.py, one word per chunk every --delay-s seconds, the
pace of a loaded CPU server), under `stop`, with --clients concurrent streams: half answer a
long clean text (a 40-row table), half loop (an introduction, then one 12-token sentence again
and again). For each holdback value:

- time to first content: seconds from sending a request to its first content text, over
  every stream (the holdback delays it by about holdback x delay);
- loops caught clean: loop streams stopped before any repeat of the sentence reached the client;
- repeats shown: words of the loop the client got beyond its first copy (median).

    PYTHONPATH=src .venv/bin/python bench/bench_holdback.py [--holdbacks 0,8,16,32,48,64]
        [--clients 16] [--delay-s 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted upstream and the proxy runner of the tests

from loopfix.serve import ServeConfig  # noqa: E402
from tests.serve.proxy import running_proxy  # noqa: E402
from tests.serve.scripted_upstream import INTRO, LOOP_UNIT, ScriptedUpstream  # noqa: E402


async def _stream(
    client: httpx.AsyncClient, url: str, model: str, holdback: int
) -> tuple[float, str]:
    """Seconds to the first content, and the content (a clean stream is left after its first)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "go"}],
        "stream": True,
        "loopfix": {"action": "stop", "holdback_tokens": holdback},
    }
    started = time.perf_counter()
    first, text = None, ""
    async with client.stream("POST", url + "/v1/chat/completions", json=body) as reply:
        async for line in reply.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[5:]).get("choices", []):
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece and first is None:
                    first = time.perf_counter() - started
                text += piece
            if first is not None and model != "loop":
                break
    return (first if first is not None else float("nan")), text


def _repeated_words(text: str) -> int:
    """Words of the loop the client got beyond the introduction and the sentence's first copy."""
    return max(0, len(text.split()) - len((INTRO + LOOP_UNIT).split()))


async def _round(url: str, clients: int, holdback: int) -> dict[str, float]:
    models = ["loop" if i % 2 else "table" for i in range(clients)]
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        results = await asyncio.gather(*(_stream(client, url, m, holdback) for m in models))
    firsts = sorted(first for first, _ in results)
    loops = [text for model, (_, text) in zip(models, results, strict=True) if model == "loop"]
    return {
        "first_median_s": statistics.median(firsts),
        "first_max_s": firsts[-1],
        "clean": sum(_repeated_words(text) == 0 for text in loops),
        "loops": len(loops),
        "repeated_words": statistics.median(_repeated_words(text) for text in loops),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holdbacks", default="0,8,16,32,48,64")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--delay-s", type=float, default=0.02)
    args = parser.parse_args()
    print(f"{args.clients} streams, a word every {args.delay_s} s, action stop")
    print("| holdback | first content, median / max (s) | loops caught clean | repeats shown |")
    print("|---|---|---|---|")
    with ScriptedUpstream(delay_s=args.delay_s) as upstream:
        with running_proxy(ServeConfig(upstream=upstream.url)) as url:
            for holdback in (int(value) for value in args.holdbacks.split(",")):
                row = asyncio.run(_round(url, args.clients, holdback))
                print(
                    f"| {holdback} | {row['first_median_s']:.2f} / {row['first_max_s']:.2f} "
                    f"| {row['clean']} of {row['loops']} | {row['repeated_words']:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
