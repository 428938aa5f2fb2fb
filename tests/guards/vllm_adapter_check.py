"""Run by test_vllm.py with .venv-vllm's Python: the vLLM adapter must give exactly the logits the
HF adapter gives on the same inputs. Prints "ok" on success."""

from __future__ import annotations

import sys
import tempfile
from types import SimpleNamespace

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality

from loopfix.guards import GuardContext, GuardError, GuardLogitsProcessor, parse_guards
from loopfix.guards.vllm import LoopfixLogitsProcessor

VOCAB = 32
SPECS = [
    ("penalty", {"penalty.repetition": 1.3, "penalty.presence": 0.5, "penalty.frequency": 0.2}),
    ("dry", {"dry.breaker_ids": [0], "dry.multiplier": 0.8}),
    ("ngram+dynamic-penalty", {"ngram.size": 2}),
    ("rescue+dry", {"rescue.min_span": 6, "rescue.max_period": 8, "dry.breaker_ids": []}),
    ("adaptive-temp+dry", {"dry.breaker_ids": []}),
]


def fake_config(tokenizer: str = "/nonexistent") -> SimpleNamespace:
    model_config = SimpleNamespace(get_vocab_size=lambda: VOCAB, tokenizer=tokenizer)
    return SimpleNamespace(model_config=model_config)


def check_think_escape() -> None:
    """rescue.escape=think_end through the processor, with the think tokens looked up from the
    model's tokenizer: the same logits as HF, and `</think>` forced once the loop is seen."""
    words = [f"w{i}" for i in range(VOCAB - 2)] + ["<think>", "</think>"]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="w0"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="w0")
    args = {"rescue.escape": "think_end", "rescue.min_span": 6, "rescue.max_period": 8}
    params = SamplingParams(temperature=0.0, extra_args={"loopfix_guards": "rescue", **args})
    prompt, stream = [VOCAB - 2, 5], [1, 2, 3, 1, 2, 3, 1, 2, 3]
    with tempfile.TemporaryDirectory() as folder:
        tokenizer.save_pretrained(folder)
        processor = LoopfixLogitsProcessor(fake_config(folder), torch.device("cpu"), False)
    output: list[int] = []
    processor.update_state(BatchUpdate(1, [], [(0, params, prompt, output)], []))
    chain = parse_guards("rescue", args, GuardContext.from_tokenizer(tokenizer), rollback=False)
    hf = GuardLogitsProcessor(chain, len(prompt), None, temperature=0.0, seed=0)
    for token in [*stream, None]:  # the step after the last token is the forced one
        logits = torch.randn(1, VOCAB)
        ours = processor.apply(logits.clone())
        theirs = hf(torch.tensor([prompt + output]), logits.clone())
        assert torch.equal(ours, theirs), len(output)
        if token is not None:
            output.append(token)
            processor.update_state(None)
    forced = torch.full((VOCAB,), -float("inf"))
    forced[VOCAB - 1] = logits[0, VOCAB - 1]
    assert torch.equal(ours[0], forced), "the loop in the think block did not force </think>"


def main() -> None:
    torch.manual_seed(0)
    prompt = [5, 6, 7, 8]
    stream = [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4]
    for spec, args in SPECS:
        processor = LoopfixLogitsProcessor(fake_config(), torch.device("cpu"), False)
        params = SamplingParams(
            temperature=0.7, seed=3, extra_args={"loopfix_guards": spec, **args}
        )
        LoopfixLogitsProcessor.validate_params(params)
        output: list[int] = []
        # Row 1 is a request without guards; the guarded one starts in row 1 and moves to row 0.
        plain = SamplingParams(temperature=0.7)
        added = [(0, plain, [9], []), (1, params, prompt, output)]
        processor.update_state(BatchUpdate(2, [], added, []))
        processor.update_state(BatchUpdate(2, [], [], [(1, 0, MoveDirectionality.SWAP)]))
        hf_chain = parse_guards(spec, args, GuardContext(VOCAB), rollback=False)
        hf = GuardLogitsProcessor(hf_chain, len(prompt), None, temperature=0.7, seed=3)
        ids = list(prompt)
        for token in stream:
            logits = torch.randn(2, VOCAB)
            ours = processor.apply(logits.clone())
            theirs = hf(torch.tensor([ids]), logits[:1].clone())
            assert torch.equal(ours[0], theirs[0]), (spec, len(ids))
            assert torch.equal(ours[1], logits[1]), "a request without guards was changed"
            output.append(token)  # vLLM appends to the live list, then calls update_state
            ids.append(token)
            processor.update_state(None)
    for bad in ({"loopfix_guards": "dyr"}, {"loopfix_guards": "dry", "dry.mult": 1}):
        try:
            LoopfixLogitsProcessor.validate_params(SamplingParams(extra_args=bad))
        except GuardError:
            continue
        sys.exit(f"validate_params accepted {bad}")
    check_think_escape()
    print("ok")


if __name__ == "__main__":
    main()
