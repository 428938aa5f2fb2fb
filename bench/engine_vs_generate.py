"""Does our decode engine generate what transformers' `model.generate` does?

    .venv/bin/python bench/engine_vs_generate.py [--model loopfix:stargraph] [--prompts 200]
        [--max-new-tokens 48]

Prints how many greedy continuations equal `model.generate`'s (one prompt at a time, no
padding) token for token, and how many T=1 samples are the same at batch 16 and batch 1 (a
sample should depend only on its own seed).
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="loopfix:stargraph")
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    torch.set_num_threads(1)

    from loopfix.backends.hf import generate
    from loopfix.models import load_model
    from loopfix.records import DecodeSettings
    from loopfix.suites import stargraph_suite

    model, tokenizer = load_model(args.model, device="cpu")
    prompts = [tokenizer(i.prompt)["input_ids"] for i in stargraph_suite(args.prompts, seed=3)]
    greedy = DecodeSettings(temperature=0.0, max_new_tokens=args.max_new_tokens)
    ours = generate(model, tokenizer, prompts, greedy, batch_size=16)
    eos = tokenizer.eos_token_id
    same = 0
    with torch.inference_mode():
        for prompt, result in zip(prompts, ours, strict=True):
            output = model.generate(
                input_ids=torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=args.max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=eos,
            )[0, len(prompt) :].tolist()
            same += result.tokens == (output[: output.index(eos) + 1] if eos in output else output)
    print(f"greedy: {same}/{len(prompts)} equal to model.generate")
    sampled = DecodeSettings(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=4)
    batched = generate(model, tokenizer, prompts, sampled, batch_size=16)
    alone = generate(model, tokenizer, prompts, sampled, batch_size=1)
    invariant = sum(a.tokens == b.tokens for a, b in zip(batched, alone, strict=True))
    print(f"T=1: {invariant}/{len(prompts)} samples equal at batch 16 and batch 1")


if __name__ == "__main__":
    main()
