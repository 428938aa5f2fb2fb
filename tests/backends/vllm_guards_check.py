"""Run by test_vllm_guards.py with .venv-vllm's Python: `VLLMBackend` with loopfix guards on the
bundled testbed (greedy, cap 48: about half the prompts loop). Prints "ok" on success.

(d) a bad guard argument is a GuardError naming guard and parameter, when the `GuardSpec` is
parsed (before an engine loads);
(a) `none` is plain vLLM generation; (b) `dry`, `ngram` and `rescue` change every looping
output and leave fewer outputs at the cap (dry and ngram: fewer loops); (c) `cut` stops where
loopfix's own cut guard stops, with finish_reason "repetition".
"""

from __future__ import annotations

import sys
from typing import Any

from vllm import SamplingParams
from vllm.inputs import TokensPrompt

from loopfix.backends.base import BackendError, Generation, Request
from loopfix.backends.spec import GuardSpec
from loopfix.backends.vllm import VLLMBackend
from loopfix.guards import GuardError, parse_guards
from loopfix.records import DecodeSettings
from loopfix.suites import stargraph_suite

MODEL = "loopfix:stargraph"
SETTINGS = DecodeSettings(temperature=0.0, max_new_tokens=48)
# Three copies of the testbed's 5-token loop unit (the default 32 would leave little of 48).
CUT_ARGS = {"cut.min_span": 15}
BAD: list[tuple[str, dict[str, Any], list[str]]] = [  # guards, arguments, what to name
    ("dry", {"dry.multiplierr": 0.5}, ["'dry'", "'multiplierr'"]),
    ("cut+ngram", {"cut.min_repeats": 1}, ["'cut'", "'min_repeats'"]),
    ("rescue", {"rescue.escape": "close"}, ["'rescue'", "'escape'"]),
    ("dry", {"ngram.size": 2}, ["'ngram'", "size"]),
]


def generate(backend: VLLMBackend, requests: list[Request]) -> list[Generation]:
    results = dict(backend.generate(requests, SETTINGS))
    return [results[index] for index in range(len(requests))]


def loopfix_cut(prompt: list[int], output: list[int]) -> dict[str, int] | None:
    """Where loopfix's own `cut` guard ends `output` ({"position", "period"}), or None."""
    chain = parse_guards("cut", CUT_ARGS)
    chain.add(0, prompt)
    for token in output:
        chain.extend(0, [token])
        if chain.stopped(0):
            return chain.record(0)["cut"]
    return None


def main() -> None:
    for guards, args, names in BAD:
        try:
            VLLMBackend.load(MODEL, guards=GuardSpec.parse(guards, args))
        except GuardError as error:  # vLLM's own admission check would raise its own error type
            if not all(name in str(error) for name in names):
                sys.exit(f"{guards} {args}: the error does not name {names}: {error}")
            continue
        sys.exit(f"VLLMBackend.load accepted {guards} {args}")

    plain = VLLMBackend.load(MODEL)
    assert plain.llm.llm_engine.model_config.logits_processors is None, "none loads no processor"
    try:  # without the processor vLLM would ignore the guards: refused, not silently off
        VLLMBackend(plain.llm, guards=GuardSpec.parse("dry"))
        sys.exit("a guard was accepted on an engine without LoopfixLogitsProcessor")
    except BackendError as error:
        assert "LoopfixLogitsProcessor" in str(error), error
    tokenizer = plain.tokenizer
    items = stargraph_suite(16, 0)
    requests = [
        Request(ids=list(tokenizer(item.prompt)["input_ids"]), seed=i)
        for i, item in enumerate(items)
    ]

    # (a) `none` is plain generation, on an engine with and without the processor.
    raw = plain.llm.generate(
        [TokensPrompt(prompt_token_ids=request.ids or []) for request in requests],
        SamplingParams(temperature=0.0, max_tokens=SETTINGS.max_new_tokens),
        use_tqdm=False,
    )
    base = generate(plain, requests)
    assert [g.tokens for g in base] == [list(r.outputs[0].token_ids) for r in raw]
    assert all(g.guards is None for g in base)
    guarded = VLLMBackend.load(MODEL, guards=GuardSpec.parse("dry"))
    assert [g.tokens for g in generate(VLLMBackend(guarded.llm), requests)] == [
        g.tokens for g in base
    ], "the processor changed requests that asked for no guard"

    cuts = [
        loopfix_cut(request.ids or [], g.tokens) for request, g in zip(requests, base, strict=True)
    ]
    looping = [i for i, cut in enumerate(cuts) if cut is not None]
    assert 4 <= len(looping) <= 12, f"expected about half the greedy prompts to loop: {looping}"

    # (b) guards served by the processor change every looping output.
    for spec, args in [("dry", {}), ("ngram", {}), ("rescue", {"rescue.min_span": 15})]:
        backend = guarded if spec == "dry" else guarded.with_guards(GuardSpec.parse(spec, args))
        outputs = generate(backend, requests)
        unchanged = [i for i in looping if outputs[i].tokens == base[i].tokens]
        assert not unchanged, f"{spec} left looping prompts {unchanged} unchanged"
        assert all(g.guards == {"guards": spec} for g in outputs)
        capped = [i for i, g in enumerate(outputs) if g.finish_reason == "length"]
        assert len(capped) < len(looping), f"{spec} left {capped} running into the cap"
        if spec == "rescue":  # it cannot roll back: the copies written before it acted stay
            continue
        still = [i for i, g in enumerate(outputs) if loopfix_cut(requests[i].ids or [], g.tokens)]
        assert len(still) < len(looping), f"{spec} did not reduce loops: {still}"

    # (c) vLLM's native cut stops exactly where loopfix's cut does (period 5 >= 15 / 3).
    stopped = generate(plain.with_guards(GuardSpec.parse("cut", CUT_ARGS)), requests)
    for i, (generation, cut) in enumerate(zip(stopped, cuts, strict=True)):
        if cut is None:
            assert generation.tokens == base[i].tokens, i
            assert generation.finish_reason == base[i].finish_reason, i
            assert generation.guards == {"guards": "cut"}, i
        else:
            assert generation.tokens == base[i].tokens[: cut["position"]], (i, cut)
            assert generation.finish_reason == "repetition", i
            assert generation.guards == {"guards": "cut", "cut": cut}, (i, generation.guards)
    print("ok")


if __name__ == "__main__":
    main()
