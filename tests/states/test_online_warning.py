"""The early warning read online by the decode engine: the same probability, step for step, as
the offline fit computes from a teacher-forced pass, on the fused Llama path and on the model's
own forward, and the hidden state each path keeps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from loopfix.backends.hf import generate
from loopfix.engine.kv_batch import KVBatch
from loopfix.models import load_model, tiny_model, tiny_tokenizer
from loopfix.records import DecodeSettings
from loopfix.states.steps import StepSignals, step_signals
from loopfix.states.warning import SIGNALS, WarningProbe, window_features
from loopfix.suites import load_suite
from loopfix.suites.render import prompt_ids


def random_probe(width: int, layer: int, window: int, seed: int) -> WarningProbe:
    rng = np.random.default_rng(seed)
    size = width + SIGNALS
    return WarningProbe(
        "test",
        layer,
        window,
        True,
        rng.normal(size=size),
        rng.uniform(0.5, 2.0, size=size),
        rng.normal(size=size),
        0.1,
        0.5,
        {},
    )


def test_the_step_probability_is_the_last_row_of_the_offline_features() -> None:
    rng = np.random.default_rng(1)
    steps, width = 40, 6
    entropy = np.where(rng.random(steps) < 0.6, 0.05, 1.5)  # streaks of low entropy
    signals = StepSignals(rng.normal(size=(steps, width)), rng.random(steps), entropy)
    for window in (1, 5, 16):
        probe = random_probe(width, 2, window, seed=window)
        offline = probe.probabilities(window_features(signals, window))
        projected = probe.project(signals.hidden)
        online = [
            probe.step_probability(projected[: t + 1], signals.top1[: t + 1], entropy[: t + 1])
            for t in range(steps)
        ]
        np.testing.assert_allclose(online, offline, rtol=1e-9, atol=1e-12)


def _prompts(tokenizer) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [prompt_ids(item, tokenizer) for item in load_suite("stargraph", 8, 4)]


@pytest.mark.parametrize("layer", [0, 1, 3])
def test_the_batch_keeps_the_state_the_model_computes_at_each_layer(layer: int) -> None:
    # The testbed is a Llama: its prefill and steps run the fused forward; the tiny Qwen2 runs
    # the model's own forward. Either way the kept state is `output_hidden_states`' entry.
    testbed, tokenizer = load_model("loopfix:stargraph", device="cpu")
    for model in (testbed, tiny_model("qwen2")):
        contexts = [[1, 5, 6, 7, 8], [2, 9, 10]]
        batch = KVBatch(model, state_layer=min(layer, model.config.num_hidden_layers))
        batch.prefill(contexts, pad_id=0)
        assert batch.states is not None
        batch.step(torch.tensor([11, 12]))
        for row, context in enumerate(contexts):
            ids = torch.tensor([[*context, 11 + row]])
            with torch.no_grad():
                expected = model(input_ids=ids, output_hidden_states=True).hidden_states
            want = expected[batch.state_layer][0, -1]  # type: ignore[index]
            torch.testing.assert_close(batch.states[row], want.float(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", ["testbed", "qwen2"])
def test_the_engine_warns_where_the_offline_probe_warns(family: str) -> None:
    if family == "testbed":
        model, tokenizer = load_model("loopfix:stargraph", device="cpu")
        prompts = _prompts(tokenizer)
    else:
        model, tokenizer = tiny_model("qwen2"), tiny_tokenizer()
        tokenizer.pad_token = tokenizer.eos_token
        prompts = [[3, 4, 5, 6], [7, 8], [9, 10, 11, 12, 13]]
    settings = DecodeSettings(temperature=0.0, max_new_tokens=40)
    plain = generate(model, tokenizer, prompts, settings, 3)
    layer = model.config.num_hidden_layers - 1
    probe = random_probe(model.config.hidden_size, layer, 4, seed=7)
    offline = [
        probe.probabilities(window_features(step_signals(model, p, g.tokens, layer), 4))
        for p, g in zip(prompts, plain, strict=True)
    ]
    # A threshold some outputs reach early, some late and some never.
    threshold = float(np.median(np.concatenate(offline)))
    probe = replace(probe, threshold=threshold)
    warned = generate(model, tokenizer, prompts, settings, 3, warning=probe)
    for p, before, after in zip(offline, plain, warned, strict=True):
        assert after.tokens == before.tokens  # reading the model changes nothing it generates
        assert after.warning_step == probe.first_warning(p)
    assert {g.warning_step is None for g in warned} != {True}
