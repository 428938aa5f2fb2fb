"""The think-escape through the served path (issue 52, point 2; docs/thinking.md): a real
`vllm serve` of the thinker (.venv-vllm), `loopfix serve --action think-escape` in front of it,
and the official `openai` SDK as the client, streamed and not; judged by answers against the
served baseline (the same server without the proxy) and against our engine's run of the same
prompts (bench/think_exits.py's --out).

    PYTHONPATH=src .venv/bin/python bench/think_exits_served.py loopfix:smollm2-think \
        --out runs/served --engine-run runs/exits-t0 [--reasoning-parser olmo3] [--n 120]

Arms: `none` (the client straight to vLLM, not streamed), `think-escape` (through the proxy, not
streamed) and `think-escape/stream` (through the proxy, streamed with usage). SmolLM2 spells
`<think>` in three tokens: with `--reasoning-parser olmo3` (a parser that reads such markers) the
thinking arrives in `reasoning`; without a parser it arrives in `content`, where the proxy finds
the open think block. The proxy's markers are the thinker's own (`<think>`, `\\n</think>\\n`).
Each arm's answers are kept in OUT/ARM.jsonl (an arm already there is not run again).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from openai import OpenAI

from loopfix.models.loading import resolve_model_path
from loopfix.records import read_samples
from loopfix.scan.stats import mcnemar_exact
from loopfix.suites.think import check_think, think_suite
from loopfix.suites.think_judge import judge_steps
from loopfix.thinking import answer_part

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/ starts the servers the tests use

from tests.serve.sdk_answers import ask  # noqa: E402
from tests.server_process import free_port, server_process  # noqa: E402
from tests.vllm_server import vllm_server  # noqa: E402

PROXY_MARKERS = {"think_start": "<think>", "think_end": "\n</think>\n"}
"""The markers as the thinker writes them, which the proxy's continuation puts around the
reasoning."""
ENGINE_ARMS = {"none": "none", "think-escape": "rescue[escape=think_end]"}
"""The engine's arm (bench/think_exits.py) each served arm is compared with."""
Answer = dict[str, Any]


def _run_arm(path: Path, client: OpenAI, stream: bool, args: Any) -> dict[str, Answer]:
    if not path.exists():
        items = think_suite(args.n, args.seed)

        def one(item: Any) -> Answer:
            answer = ask(
                client,
                item.messages,
                stream,
                model="thinker",
                max_tokens=args.max_new_tokens,
                temperature=args.temperature,
                seed=args.seed,
            )
            ended = answer.finish_reason == "stop"
            correct = check_think(answer.text, item.answer, item.meta, ended)
            return {"prompt_id": item.id, **asdict(answer), "text": answer.text, "correct": correct}

        with ThreadPoolExecutor(args.clients) as pool:
            answers = list(pool.map(one, items))
        path.write_text("".join(json.dumps(answer) + "\n" for answer in answers))
    return {row["prompt_id"]: row for row in map(json.loads, path.open())}


def _normal(text: str) -> str:
    return "".join(text.split())  # a reasoning field loses the white space around its markers


def _row(arm: str, ours: dict[str, Answer], base: dict[str, Answer], engine: Path | None) -> str:
    keys = sorted(ours)
    rescued = sum(ours[k]["correct"] and not base[k]["correct"] for k in keys)
    lost = sum(base[k]["correct"] and not ours[k]["correct"] for k in keys)
    finishes = Counter(ours[k]["finish_reason"] for k in keys)
    loops = sum(judge_steps(ours[k]["text"]).label != "clean" for k in keys)
    tokens = [ours[k]["completion_tokens"] for k in keys]
    usage = "–" if None in tokens else f"{sum(tokens) / len(tokens):.0f}"
    cells = [
        f"`{arm}`",
        f"{sum(ours[k]['correct'] for k in keys)}/{len(keys)}",
        "–" if arm == "none" else str(rescued),
        "–" if arm == "none" else str(lost),
        "–" if arm == "none" else f"{mcnemar_exact(rescued, lost):.3g}",
        str(loops),
        ", ".join(f"{reason} {count}" for reason, count in sorted(finishes.items())),
        usage,
    ]
    if engine is not None:
        theirs = {s.prompt_id: s for s in read_samples(engine)}
        alike = sum(bool(theirs[k].correct) == ours[k]["correct"] for k in keys)
        same_text = sum(_normal(theirs[k].text) == _normal(ours[k]["text"]) for k in keys)
        same_answer = sum(
            _normal(answer_part(theirs[k].text)) == _normal(answer_part(ours[k]["text"]))
            for k in keys
        )
        cells += [f"{alike}/{len(keys)}", f"{same_text}", f"{same_answer}"]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--engine-run", type=Path, help="bench/think_exits.py's --out")
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--reasoning-parser",
        help="vLLM's --reasoning-parser (olmo3 reads markers spelled in several tokens): the "
        "thinking then arrives in `reasoning`, else in `content`",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = resolve_model_path(args.model)
    options = ["--max-model-len", "1024", "--served-model-name", "thinker"]
    if args.reasoning_parser:
        options += ["--reasoning-parser", args.reasoning_parser]
    config = args.out / "serve.json"
    config.write_text(json.dumps(PROXY_MARKERS))
    with vllm_server(folder, args.out / "vllm.log", options=options) as upstream:
        port = free_port()
        proxy = f"http://127.0.0.1:{port}"
        command = [str(ROOT / ".venv" / "bin" / "loopfix"), "serve", "--upstream", upstream]
        command += ["--port", str(port), "--action", "think-escape", "--config", str(config)]
        with server_process(command, args.out / "proxy.log", proxy + "/metrics", 60, None):
            direct = OpenAI(base_url=upstream + "/v1", api_key="none", timeout=600)
            proxied = OpenAI(base_url=proxy + "/v1", api_key="none", timeout=600)
            runs: dict[str, Callable[[], dict[str, Answer]]] = {
                "none": lambda: _run_arm(args.out / "none.jsonl", direct, False, args),
                "think-escape": lambda: _run_arm(
                    args.out / "think-escape.jsonl", proxied, False, args
                ),
                "think-escape/stream": lambda: _run_arm(
                    args.out / "think-escape-stream.jsonl", proxied, True, args
                ),
            }
            answers = {arm: run() for arm, run in runs.items()}
            metrics = subprocess.run(
                ["curl", "-s", proxy + "/metrics"], capture_output=True, text=True, check=True
            ).stdout
    print(
        "| arm | right | rescued | lost | McNemar p | loops (step judge) | finish reasons "
        "| mean completion tokens (usage) |"
        + (" judged alike with the engine | same text | same answer |" if args.engine_run else "")
    )
    print("|---" * (8 + 3 * bool(args.engine_run)) + "|")
    for arm, ours in answers.items():
        engine = None
        if args.engine_run is not None:
            engine_arm = ENGINE_ARMS[arm.split("/")[0]]
            temperature_dir = f"T{args.temperature:g}"
            engine = args.engine_run / "watched" / "runs" / engine_arm / temperature_dir
            engine = engine / "records.jsonl"
        print(_row(arm, ours, answers["none"], engine))
    print("\nThe proxy's rescue counts:")
    print("\n".join(line for line in metrics.splitlines() if line.startswith("loopfix_rescues")))


if __name__ == "__main__":
    main()
