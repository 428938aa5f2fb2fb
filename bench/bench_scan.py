"""Scan throughput, side by side: hf at batch 16 vs batch 1, and vllm vs hf, on the testbed.

    .venv/bin/python bench/bench_scan.py [--model loopfix:stargraph] [--prompts 64]
        [--max-new-tokens 48] [--threads 1]

Every backend continues the same stargraph prompts at temperature 1 with per-request seeds
(the scan's requests); tokens/s counts generated tokens over generation time, model loading
excluded. The vllm row runs this script again under .venv-vllm (skipped when it is absent).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"


def requests_for(model: str, prompts: int) -> list:
    from transformers import AutoTokenizer

    from loopfix.backends import Request
    from loopfix.models import resolve_model_path
    from loopfix.scan.plan import sample_seed
    from loopfix.suites import stargraph_suite

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(model))
    items = stargraph_suite(prompts, seed=777)
    return [
        Request(ids=tokenizer(i.prompt)["input_ids"], seed=sample_seed(0, i.id, 0)) for i in items
    ]


def tokens_per_second(backend, requests: list, max_new_tokens: int) -> float:
    from loopfix.records import DecodeSettings

    settings = DecodeSettings(temperature=1.0, max_new_tokens=max_new_tokens)
    list(backend.generate(requests[: backend.batch_size], settings))  # warm-up
    started = time.perf_counter()
    generated = sum(len(g.tokens) for _, g in backend.generate(requests, settings))
    return generated / (time.perf_counter() - started)


def measure(kind: str, batch_size: int, args: argparse.Namespace) -> float:
    requests = requests_for(args.model, args.prompts)
    if kind == "vllm":
        from loopfix.backends.vllm import VLLMBackend

        backend = VLLMBackend.load(args.model, batch_size=len(requests))
    else:
        from loopfix.backends import HFBackend

        backend = HFBackend.load(args.model, device="cpu", batch_size=batch_size)
    return tokens_per_second(backend, requests, args.max_new_tokens)


def vllm_row(args: argparse.Namespace) -> float | None:
    if not VLLM_PYTHON.exists():
        return None
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(args.threads),
    }
    command = [
        str(VLLM_PYTHON),
        __file__,
        "--only-vllm",
        "--model",
        args.model,
        "--prompts",
        str(args.prompts),
        "--max-new-tokens",
        str(args.max_new_tokens),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return float(json.loads(finished.stdout.strip().splitlines()[-1])["vllm"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:stargraph")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--only-vllm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only_vllm:
        print(json.dumps({"vllm": measure("vllm", 0, args)}))
        return
    import torch

    torch.set_num_threads(args.threads)
    batch_1 = measure("hf", 1, args)
    batch_16 = measure("hf", 16, args)
    vllm = vllm_row(args)
    print(
        f"{args.prompts} stargraph prompts, T=1, max_new_tokens {args.max_new_tokens}, "
        f"{args.threads} threads"
    )
    print(f"hf batch 1    {batch_1:9.1f} tokens/s")
    print(f"hf batch 16   {batch_16:9.1f} tokens/s   x{batch_16 / batch_1:.1f} vs batch 1")
    if vllm is None:
        print("vllm          (skipped: no .venv-vllm; bash scripts/setup-vllm.sh)")
    else:
        print(f"vllm          {vllm:9.1f} tokens/s   x{vllm / batch_16:.1f} vs hf batch 16")


if __name__ == "__main__":
    main()
