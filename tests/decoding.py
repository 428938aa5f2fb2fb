"""Plain greedy decoding with transformers' own `model.generate`: the reference our decode
engine and guards are checked against. Import as `from tests.decoding import plain_greedy`."""

from __future__ import annotations

from typing import Any

import torch

EOS = 2  # the tiny configs' `</s>`, also used as pad


def plain_greedy(model: Any, prompt: list[int], max_new_tokens: int, **options: Any) -> list[int]:
    """One prompt, no padding, EOS = pad = 2; the output cut after its first EOS."""
    output = model.generate(
        input_ids=torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=EOS,
        eos_token_id=EOS,
        **options,
    )[0, len(prompt) :].tolist()
    return output[: output.index(EOS) + 1] if EOS in output else output


def assert_engine_equals_generate(
    model: Any, tokenizer: Any, prompts: list[list[int]], max_new_tokens: int = 24
) -> None:
    """Our engine, the prompts in one left-padded batch, gives each prompt exactly the tokens
    transformers' greedy `generate` gives it alone, with the model's own generation config."""
    from loopfix.backends.hf import generate
    from loopfix.records import DecodeSettings

    settings = DecodeSettings(temperature=0.0, max_new_tokens=max_new_tokens)
    ours = generate(model, tokenizer, prompts, settings, batch_size=len(prompts))
    with torch.inference_mode():
        for prompt, result in zip(prompts, ours, strict=True):
            expected = model.generate(
                input_ids=torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                max_new_tokens=max_new_tokens,
                do_sample=False,
            )[0, len(prompt) :].tolist()
            assert result.tokens == expected
