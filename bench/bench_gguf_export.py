"""A patched GGUF, reloaded: do its greedy outputs match the patched HF model's?

    PYTHONPATH=src .venv/bin/python bench/bench_gguf_export.py [--model smollm2] [--suite arith]
        [--prompts 16] [--seed 0] [--max-new-tokens 40] [--layers 4,20] [--k 16] [--alpha 4]
        [--patch PATCH] [--threads 1] [--llama-python PY]

`--model NAME`: a packaged GGUF (`loopfix:NAME`: smollm2, gemma3-270m); any but smollm2 needs
`--patch` (the recipe below is SmolLM2's). Prompts: `--suite` rendered as a scan renders them.

Builds a real patch on SmolLM2-135M-Instruct (float32, from `loopfix:smollm2`): the `--k`
down_proj columns of each of `--layers` that write most along a seeded direction, edited along
it with `--alpha` (tests/patch/helpers.py `smollm2_requests`, the recipe the tests use), or the
patch at `--patch` (a repair's patch.json or its folder). Then,
for each `--gguf-type` (the file's own Q4_1, F16, Q8_0), writes the patched GGUF with
`export_patched_gguf`, reloads it through loopfix's own loader (converted into a temporary
cache) and counts, over `--prompts` `arith` prompts (`--seed`, chat template), how many greedy
continuations of `--max-new-tokens` equal the patched HF model's token for token. The base
model's row says how many prompts the patch changes at all.

`--llama-python PY` also runs llama.cpp itself (bench/llama_cpp_greedy.py under PY) on the
original file (compared with the base model) and on each written file (compared with the
patched model), on the same prompt ids. llama.cpp for this: the `llama-cpp-cffi` wheel
(0.4.42, a prebuilt CPU llama.cpp) in its own venv; its library wants GCC 14's libstdc++, so
on Debian 12 preload bench/libstdcxx_shim.cc built with
`g++ -shared -fPIC -O2 -o /tmp/shim.so bench/libstdcxx_shim.cc` (LD_PRELOAD=/tmp/shim.so).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the patch recipe lives with the tests that use it

GGUF_TYPES = ("same", "f16", "q8_0")


def greedy(model, tokenizer, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    from loopfix.backends.hf import generate
    from loopfix.records import DecodeSettings

    settings = DecodeSettings(temperature=0.0, max_new_tokens=max_new_tokens)
    return [g.tokens for g in generate(model, tokenizer, prompts, settings, batch_size=8)]


def agreement(ours: list[list[int]], reference: list[list[int]]) -> dict[str, object]:
    """Prompts equal token for token, and where the others first differ."""
    first_differences = [
        next((i for i, (a, b) in enumerate(zip(x, y, strict=False)) if a != b), min(len(x), len(y)))
        for x, y in zip(ours, reference, strict=True)
        if x != y
    ]
    return {
        "identical": sum(x == y for x, y in zip(ours, reference, strict=True)),
        "of": len(reference),
        "first_difference_at": first_differences,
    }


def llama_cpp(
    python: str, model: Path, prompts: list[list[int]], args, eos: int
) -> list[list[int]]:
    job = {"model": str(model), "prompts": prompts, "max_new_tokens": args.max_new_tokens}
    result = subprocess.run(
        [python, str(ROOT / "bench" / "llama_cpp_greedy.py")],
        input=json.dumps({**job, "eos": eos}),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="packaged GGUF: loopfix:NAME")
    parser.add_argument("--suite", default="arith", help="suite the prompts come from")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--layers", default="4,20")
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--alpha", type=float, default=4.0)
    parser.add_argument("--patch", type=Path, default=None, help="a patch instead of the recipe")
    parser.add_argument("--seed", type=int, default=0, help="seed of the suite's prompts")
    parser.add_argument("--llama-python", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.model != "smollm2" and args.patch is None:
        parser.error("--patch: the built-in recipe is SmolLM2's; give a patch for this model")

    import torch

    # Two threads spin against each other on shared cores (see tests/conftest.py).
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="bench-gguf-export."))
    from loopfix.models import CACHE_DIR_VARIABLE, load_model
    from loopfix.models.packaged import packaged_model_path
    from loopfix.patch import GgufExportConfig, build_patch, export_patched_gguf, patched
    from loopfix.patch.format import load_patch, resolve_patch_path
    from loopfix.suites import load_suite
    from loopfix.suites.render import prompt_ids
    from tests.patch.helpers import smollm2_requests

    model, tokenizer = load_model(f"loopfix:{args.model}", device="cpu")
    source = packaged_model_path(args.model)  # a joined file lives in the user's cache
    # Written files are converted into a throwaway cache (538 MB each), not the user's.
    os.environ[CACHE_DIR_VARIABLE] = str(work / "cache")
    if args.patch is not None:
        patch = load_patch(resolve_patch_path(args.patch))
        described: dict[str, object] = {"file": str(args.patch)}
    else:
        layers = tuple(int(layer) for layer in args.layers.split(","))
        patch = build_patch(
            model, smollm2_requests(model, layers, args.k, args.alpha), model_id="loopfix:smollm2"
        )
        described = {"layers": layers, "k": args.k, "alpha": args.alpha}
    items = load_suite(args.suite, args.prompts, args.seed)
    prompts = [prompt_ids(item, tokenizer) for item in items]
    base = greedy(model, tokenizer, prompts, args.max_new_tokens)
    with patched(model, patch):
        reference = greedy(model, tokenizer, prompts, args.max_new_tokens)
    eos = int(tokenizer.eos_token_id)
    report: dict[str, object] = {
        "patch": {**described, "touched_fraction": patch.touched_fraction},
        "model": args.model,
        "suite": args.suite,
        "prompts": args.prompts,
        "seed": args.seed,
        "max_new_tokens": args.max_new_tokens,
        "base_vs_patched_hf": agreement(base, reference),
    }
    if args.llama_python:
        llama_original = llama_cpp(args.llama_python, source, prompts, args, eos)
        report["llama_cpp_original_vs_base_hf"] = agreement(llama_original, base)
    for gguf_type in GGUF_TYPES:
        out = work / f"patched-{gguf_type}.gguf"
        started = time.perf_counter()
        rows = export_patched_gguf(source, patch, out, GgufExportConfig(gguf_type=gguf_type))
        exported = time.perf_counter() - started
        reloaded, _ = load_model(out, device="cpu")
        ours = greedy(reloaded, tokenizer, prompts, args.max_new_tokens)
        del reloaded
        row: dict[str, object] = {
            "tensors": [r.describe() for r in rows],
            "export_s": round(exported, 1),
            "reloaded_vs_patched_hf": agreement(ours, reference),
        }
        if args.llama_python:
            theirs = llama_cpp(args.llama_python, out, prompts, args, eos)
            row["llama_cpp_vs_patched_hf"] = agreement(theirs, reference)
            # The same file on both sides, and whether llama.cpp sees the patch at all.
            row["llama_cpp_vs_reloaded"] = agreement(theirs, ours)
            row["llama_cpp_vs_llama_cpp_original"] = agreement(theirs, llama_original)
        report[gguf_type] = row
        print(json.dumps({gguf_type: row}), file=sys.stderr, flush=True)  # progress
        shutil.rmtree(work / "cache")
        out.unlink()
    shutil.rmtree(work)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
