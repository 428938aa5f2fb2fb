"""Scan throughput, side by side: hf at batch 16 vs batch 1, vs `model.generate`, vs vllm.

    .venv/bin/python bench/bench_scan.py [--model loopfix:stargraph] [--prompts 128]
        [--max-new-tokens 48] [--temperature 1] [--repeats 3] [--threads 1]

Every backend continues the same stargraph prompts with per-request seeds (the scan's
requests); tokens/s counts generated tokens over generation time, model loading excluded. The
baseline row is transformers' own `model.generate` over fixed left-padded batches of 16 (what
the hf backend did before its decode engine). The vllm row runs this script again under
.venv-vllm (skipped when it is absent).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

VLLM_PYTHON = Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"


def requests_for(model: str, prompts: int) -> list:
    from transformers import AutoTokenizer

    from loopfix.backends import Request
    from loopfix.models import resolve_model_path
    from loopfix.seeds import derive_seed
    from loopfix.suites import stargraph_suite

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(model))
    items = stargraph_suite(prompts, seed=777)
    return [
        Request(ids=tokenizer(i.prompt)["input_ids"], seed=derive_seed(0, i.id, 0, bits=31))
        for i in items
    ]


def tokens_per_second(backend, requests: list, args: argparse.Namespace) -> float:
    from loopfix.records import DecodeSettings

    settings = DecodeSettings(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    list(backend.generate(requests[: backend.batch_size], settings))  # warm-up
    best = 0.0
    for _ in range(args.repeats):  # the best of a few: a shared machine only ever slows a run
        started = time.perf_counter()
        generated = sum(len(g.tokens) for _, g in backend.generate(requests, settings))
        best = max(best, generated / (time.perf_counter() - started))
    return best


def generate_baseline(
    model: str, requests: list, args: argparse.Namespace, stop_at_eos: bool = True
) -> float:
    """transformers' `model.generate` over fixed batches of 16, each seeded once; without
    `stop_at_eos`, every row generates all `max_new_tokens` (its end-of-text token does not
    end it)."""
    import torch
    from transformers import GenerationConfig

    from loopfix.models import load_model

    hf_model, tokenizer = load_model(model, device="cpu")
    sampling = {"temperature": args.temperature} if args.temperature else {}
    eos = tokenizer.eos_token_id if stop_at_eos else None
    config = GenerationConfig(
        max_new_tokens=args.max_new_tokens,
        do_sample=bool(args.temperature),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=eos,
        **sampling,
    )

    def run(batch: list) -> int:
        tokenizer.padding_side = "left"
        encoded = tokenizer.pad({"input_ids": [r.ids for r in batch]}, return_tensors="pt")
        torch.manual_seed(batch[0].seed)
        output = hf_model.generate(**encoded, generation_config=config)
        rows = output[:, encoded["input_ids"].shape[1] :].tolist()
        return sum(row.index(eos) + 1 if eos in row else len(row) for row in rows)

    best = 0.0
    with torch.inference_mode():
        run(requests[:16])  # warm-up
        for _ in range(args.repeats):
            started = time.perf_counter()
            generated = sum(run(requests[i : i + 16]) for i in range(0, len(requests), 16))
            best = max(best, generated / (time.perf_counter() - started))
    return best


def measure(kind: str, batch_size: int, args: argparse.Namespace) -> float:
    requests = requests_for(args.model, args.prompts)
    if kind == "vllm":
        from loopfix.backends.vllm import VLLMBackend

        backend = VLLMBackend.load(args.model, batch_size=len(requests))
    else:
        from loopfix.backends import HFBackend

        backend = HFBackend.load(args.model, device="cpu", batch_size=batch_size)
    return tokens_per_second(backend, requests, args)


def vllm_row(args: argparse.Namespace) -> float | None:
    from loopfix.backends.vllm import cpu_process_env

    if not VLLM_PYTHON.exists():
        return None
    env = cpu_process_env(OMP_NUM_THREADS=str(args.threads))
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
        "--temperature",
        str(args.temperature),
        "--repeats",
        str(args.repeats),
    ]
    finished = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return float(json.loads(finished.stdout.strip().splitlines()[-1])["vllm"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:stargraph")
    parser.add_argument("--prompts", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=1.0)
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
    baseline = generate_baseline(args.model, requests_for(args.model, args.prompts), args)
    vllm = vllm_row(args)
    print(
        f"{args.prompts} stargraph prompts, T={args.temperature:g}, "
        f"max_new_tokens {args.max_new_tokens}, {args.threads} threads, best of {args.repeats}"
    )
    print(f"hf batch 1    {batch_1:9.1f} tokens/s")
    print(f"hf batch 16   {batch_16:9.1f} tokens/s   x{batch_16 / batch_1:.1f} vs batch 1")
    print(
        f"model.generate, fixed batches of 16 {baseline:9.1f} tokens/s   "
        f"(hf batch 16 is x{batch_16 / baseline:.1f})"
    )
    if vllm is None:
        print("vllm          (skipped: no .venv-vllm; bash scripts/setup-vllm.sh)")
    else:
        print(f"vllm          {vllm:9.1f} tokens/s   x{vllm / batch_16:.1f} vs hf batch 16")


if __name__ == "__main__":
    main()
