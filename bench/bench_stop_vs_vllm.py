"""loopfix against vLLM's own repetition stop, on the same prompts: reads a guard comparison run
on vLLM with the guards none, cut and rescue (`cut` is vLLM's `repetition_detection`, with
loopfix's cut thresholds mapped onto it; `rescue` is loopfix's logits processor), and adds
loopfix's stop as `loopfix serve` and the LiteLLM guardrail apply it: each `none` output is
replayed token by token (the model's own token pieces, as vLLM streams them) through a real
`loopfix serve --action stop` in front of the scripted upstream, which sends those events.

Per method, against `none` and paired by prompt: loops of `none` it ended (stopped, or for
rescue no longer looping), false stops (outputs it ended with "repetition": of answers `none`
got right, and of outputs that did not loop under `none`), answers recovered and lost, outputs
still cut at the token limit, and tokens generated (for the replayed stop: the events the proxy read
before it closed the stream, one token each).

    VLLM_CPU_KVCACHE_SPACE=1 .venv-vllm/bin/loopfix compare loopfix:smollm2 --backend vllm \\
      --suite tasks --n 40 --temperatures 0 --max-new-tokens 256 --guards none,cut,rescue \\
      --out runs/vllm-repetition-vs-loopfix
    PYTHONPATH=src .venv/bin/python bench/bench_stop_vs_vllm.py runs/vllm-repetition-vs-loopfix
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import httpx
from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scripted upstream and the proxy runner of the tests

from loopfix.models import resolve_model_path  # noqa: E402
from loopfix.serve import ServeConfig  # noqa: E402
from loopfix.suites import check_answer, load_suite  # noqa: E402
from tests.serve.proxy import running_proxy  # noqa: E402
from tests.serve.scripted_upstream import ScriptedUpstream  # noqa: E402

Record = dict[str, Any]


def records(run: Path, guard: str, temperature: float) -> dict[str, Record]:
    path = run / "runs" / guard / f"T{temperature:g}" / "records.jsonl"
    rows = (json.loads(line) for line in path.read_text().splitlines())
    return {row["prompt_id"]: row for row in rows}


def pieces(tokenizer: Any, tokens: list[int]) -> list[str]:
    """Each token's text as a stream delivers it (the decoded prefix grows by it)."""
    out, before = [], ""
    for end in range(1, len(tokens) + 1):
        text = tokenizer.decode(tokens[:end], skip_special_tokens=True)
        out.append(text[len(before) :])
        before = text
    return out


def replay(proxy: str, record: Record, tokenizer: Any) -> Record:
    """The record as `loopfix serve --action stop` would have answered it."""
    events = [
        {"id": "r", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {k: v}}]}
        for k, v in (("content", piece) for piece in pieces(tokenizer, record["tokens"]))
    ]
    final = {"index": 0, "delta": {}, "finish_reason": record["finish_reason"]}
    events.append({"id": "r", "object": "chat.completion.chunk", "choices": [final]})
    body = {
        "model": "replay",
        "messages": [{"role": "user", "content": "replayed"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "raw_events": [json.dumps(event) for event in events],
        "loopfix": {"action": "stop"},
    }
    text, finish, generated = "", None, len(record["tokens"])
    with httpx.stream("POST", proxy + "/v1/chat/completions", json=body, timeout=60) as reply:
        for line in reply.iter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            event = json.loads(line[5:])
            if event.get("usage"):
                generated = event["usage"]["completion_tokens"]  # read before the stop
            for choice in event.get("choices", []):
                text += (choice.get("delta") or {}).get("content") or ""
                finish = choice.get("finish_reason") or finish
    return {"text": text, "finish_reason": finish, "length": generated}


def judged(item: Any, row: Record) -> bool:
    stopped = row["finish_reason"] == "stop"
    return bool(check_answer(item.checker, row["text"], item.answer, item.meta, stopped))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a `loopfix compare` folder with none,cut,rescue")
    parser.add_argument("--temperature", type=float, default=0.0, help="one of the run's")
    args = parser.parse_args()
    at = args.temperature
    scan = args.run / "runs" / "none" / f"T{at:g}" / "scan.json"
    config = json.loads(scan.read_text())["config"]
    items = {item.id: item for item in load_suite(config["suite"], config["n"], config["seed"])}
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(config["model"]))
    none = records(args.run, "none", at)
    methods = {"vLLM repetition_detection (cut)": records(args.run, "cut", at)}
    with ScriptedUpstream() as upstream, running_proxy(ServeConfig(upstream=upstream.url)) as url:
        methods["loopfix stop (serve, guardrail)"] = {
            key: replay(url, row, tokenizer) for key, row in none.items()
        }
    methods["loopfix rescue (processor)"] = records(args.run, "rescue", at)
    right = {key: judged(items[key], row) for key, row in none.items()}
    loops = [key for key, row in none.items() if row["loop"]["looping"]]
    cuts = sum(row["finish_reason"] == "length" for row in none.values())
    mean = sum(len(row["tokens"]) for row in none.values()) / len(none)
    cap = config["max_new_tokens"]
    print(f"{config['model']}, {config['suite']}, n={len(none)}, T={at:g}, cap {cap}")
    # Answers first, then the answers a stop cost, cuts, loops, tokens.
    print("| method | answers + / - | stops of right answers / of non-loops |", end="")
    print(" cut at cap | loops of none ended | tokens generated (mean) |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| none | - | - | {cuts} | 0 of {len(loops)} | {mean:.1f} |")
    for name, rows in methods.items():
        ok = {key: judged(items[key], rows[key]) for key in none}
        ended = sum(
            rows[key]["finish_reason"] == "repetition"
            or not rows[key].get("loop", {"looping": True})["looping"]
            for key in loops
        )
        stops = [k for k in none if rows[k]["finish_reason"] == "repetition"]
        false = sum(right[k] for k in stops)
        unlooped = sum(k not in loops for k in stops)
        gained = sum(ok[k] and not right[k] for k in none)
        lost = sum(right[k] and not ok[k] for k in none)
        cut = sum(row["finish_reason"] == "length" for row in rows.values())
        tokens = sum(row.get("length") or len(row["tokens"]) for row in rows.values()) / len(rows)
        print(f"| {name} | +{gained} / -{lost} | {false} / {unlooped} |", end="")
        print(f" {cut} | {ended} of {len(loops)} | {tokens:.1f} |")


if __name__ == "__main__":
    main()
