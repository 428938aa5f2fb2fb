"""The engine's speed-ups compute what transformers does: the in-place KV cache
(`SpareLayer`), oneDNN linear layers on packed weights (`OneDNNLinear`) and the fused forward
of Llama-architecture models (`LlamaFused`: its packed prefill and decode steps, on the
compiled kernels and on torch's operators), on real forward passes."""

import copy

import pytest
import torch
from torch import nn

from loopfix.engine.fast.llama_fused import fused_forward
from loopfix.engine.fast.onednn import OneDNNLinear, accelerate, onednn_available
from loopfix.engine.kv_batch import SPARE_POSITIONS, KVBatch, SpareLayer
from loopfix.models import load_model, tiny_model

from .greedy import assert_same_greedy


def test_spare_cache_steps_joins_and_drops_like_a_full_forward() -> None:
    model = tiny_model("llama")
    batch = KVBatch(model)
    assert all(isinstance(layer, SpareLayer) for layer in batch.cache.layers)
    contexts = [[1, 5, 6, 7], [1, 9, 3]]
    batch.prefill(contexts, pad_id=0)
    newcomer = KVBatch(model)
    newcomer.prefill([[1, 20, 21, 22, 23, 24]], pad_id=0)
    batch.join(newcomer)
    contexts.append([1, 20, 21, 22, 23, 24])
    batch.keep([0, 2])  # the middle row leaves
    contexts = [contexts[0], contexts[2]]
    with torch.inference_mode():
        # Past the buffers' spare room: the cache reallocates in the middle of the walk.
        for step in range(SPARE_POSITIONS + 8):
            tokens = torch.tensor([10 + step % 50, 60 - step % 40])
            logits = batch.step(tokens)
            for context, token in zip(contexts, tokens.tolist(), strict=True):
                context.append(token)
    for row, context in enumerate(contexts):
        with torch.inference_mode():
            alone = model(torch.tensor([context])).logits[0, -1].float()
        torch.testing.assert_close(logits[row], alone, rtol=1e-4, atol=1e-4)


def test_onednn_linears_match_torch_and_step_aside_for_gradients() -> None:
    assert onednn_available()  # the torch wheel this project pins ships oneDNN
    model = tiny_model("llama")
    reference = copy.deepcopy(model)
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    with accelerate(model) as handle:
        assert handle.layers == sum(type(m) is OneDNNLinear for m in model.modules()) > 0
        assert model.state_dict().keys() == reference.state_dict().keys()
        with torch.inference_mode():
            ours, theirs = model(ids).logits, reference(ids).logits
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
        # With gradients it is nn.Linear itself: bit for bit, and differentiable.
        layer = next(m for m in model.modules() if isinstance(m, OneDNNLinear))
        plain = nn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None)
        plain.load_state_dict(layer.state_dict())
        x = torch.randn(3, layer.in_features, requires_grad=True)
        assert torch.equal(layer(x), plain(x))
        layer(x).sum().backward()
        assert x.grad is not None
    assert not any(type(m) is OneDNNLinear for m in model.modules())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_packed_weights_follow_in_place_edits_and_replaced_parameters(dtype) -> None:
    layer = nn.Linear(24, 40).to(dtype)
    x = torch.randn(5, 24, dtype=dtype)
    with accelerate(layer), torch.inference_mode():
        torch.testing.assert_close(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
    layer.weight.detach()[:, 3] += 1.0  # how a patch writes (a detached view of the weight)
    with accelerate(layer), torch.inference_mode():  # held again: the edit is seen
        torch.testing.assert_close(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
    layer.weight = nn.Parameter(torch.randn(40, 24, dtype=dtype))  # replaced
    with accelerate(layer), torch.inference_mode():
        torch.testing.assert_close(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
    assert type(layer) is nn.Linear and "_packed" not in vars(layer)


def test_handles_nest_and_a_failed_switch_is_undone(monkeypatch) -> None:
    from loopfix.engine.fast import onednn

    model = tiny_model("llama")
    outer = accelerate(model)
    with accelerate(model) as inner:
        assert inner.layers == outer.layers > 0
    assert type(model.lm_head) is OneDNNLinear  # the outer hold still stands
    outer.remove()
    outer.remove()  # a second remove is a no-op
    assert not any(type(m) is OneDNNLinear for m in model.modules())

    # A switch that fails halfway: the layers switched so far go back before the error.
    yielded: list[nn.Module] = []
    real_modules = nn.Module.modules

    def failing_modules(self):
        for module in real_modules(self):
            if type(module) is nn.Linear and len(yielded) == 3:
                assert all(type(m) is OneDNNLinear for m in yielded)  # switched so far
                raise RuntimeError("halfway")
            if type(module) is nn.Linear:
                yielded.append(module)
            yield module

    monkeypatch.setattr(nn.Module, "modules", failing_modules)
    with pytest.raises(RuntimeError, match="halfway"):
        accelerate(model)
    monkeypatch.undo()
    assert len(yielded) == 3
    assert not any(type(m) is OneDNNLinear for m in model.modules())
    assert model not in onednn._SWITCHED


@pytest.mark.slow
def test_onednn_greedy_walks_equal_mkl_ones_on_the_real_model(smollm2_folder) -> None:
    from loopfix.backends.hf import generate
    from loopfix.records import DecodeSettings
    from loopfix.suites import arith_suite
    from loopfix.suites.render import prompt_ids

    model, tokenizer = load_model("loopfix:smollm2", device="cpu")
    prompts = [prompt_ids(item, tokenizer) for item in arith_suite(4, seed=0)]
    settings = DecodeSettings(temperature=0.0, max_new_tokens=48)
    with torch.inference_mode():
        mkl = [
            model.generate(
                input_ids=torch.tensor([p]),
                attention_mask=torch.ones(1, len(p), dtype=torch.long),
                max_new_tokens=48,
                do_sample=False,
            )[0, len(p) :].tolist()
            for p in prompts
        ]
    reference = copy.deepcopy(model)  # keeps torch's own linear layers
    ours = generate(model, tokenizer, prompts, settings, batch_size=4)
    assert type(model.lm_head) is nn.Linear  # oneDNN only inside the engine's calls
    for prompt, result, expected in zip(prompts, ours, mkl, strict=True):
        assert_same_greedy(reference, prompt, result.tokens, expected)


# float16: oneDNN packs no float16 weight here, so the step runs its unpacked projections, and
# there is no float16 kernel build: torch's operators only.
@pytest.mark.parametrize(
    ("dtype", "use_kernels"),
    [
        (torch.float32, True),
        (torch.bfloat16, True),
        (torch.float32, False),
        (torch.bfloat16, False),
        (torch.float16, False),
    ],
    ids=["float32-kernels", "bfloat16-kernels", "float32-torch", "bfloat16-torch", "float16-torch"],
)
@pytest.mark.parametrize(
    "contexts",
    [[[1, 5, 6, 7, 8], [1, 9, 3], [1, 4, 4, 4, 4]], [[1, 5, 6], [1, 9, 3], [1, 4, 4]]],
    ids=["left-padded", "unpadded"],
)
def test_fused_forward_matches_the_model_follows_edits_and_steps_aside_for_hooks(
    dtype, use_kernels, contexts
) -> None:
    model = tiny_model("llama").to(dtype)
    fused = fused_forward(model)
    assert fused is not None and fused.supported()
    fused.use_kernels = use_kernels
    assert (fused.kernels() is not None) == use_kernels  # this machine's compiler builds them
    seen: list[int] = []
    down_proj = model.model.layers[0].mlp.down_proj

    def record(module, args, output) -> None:
        seen.append(output.shape[0])

    hook = down_proj.register_forward_hook(record)
    assert not fused.supported()  # a hook must see its module run: the model's forward runs
    theirs = KVBatch(model)
    reference = theirs.prefill(contexts, pad_id=0)
    hook.remove()
    mine = KVBatch(model)
    ours = mine.prefill(contexts, pad_id=0)  # packed, on the kernels (else the model's)
    # float32: summation order; bfloat16 and float16: a few roundings of the dtype.
    tolerance = 1e-4 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(ours, reference, rtol=tolerance, atol=tolerance)
    for step in range(12):
        if step == 6:  # how a patch writes: in place, through a detached view
            model.model.layers[1].self_attn.k_proj.weight.detach()[:, 2] += 0.5
            model.model.layers[0].mlp.up_proj.weight.detach()[3] -= 0.25
        tokens = torch.tensor([10 + step, 20 + step, 4])
        with torch.inference_mode():
            ours = mine.step(tokens)
            hook = down_proj.register_forward_hook(record)
            reference = theirs.step(tokens)
            hook.remove()
        torch.testing.assert_close(ours, reference, rtol=tolerance, atol=tolerance)
        torch.testing.assert_close(mine.mask, theirs.mask, rtol=0, atol=0)
    assert seen == [3] * 13  # the hooked batch ran the model's modules: prefill, every step


@pytest.mark.parametrize("family", ["qwen3", "gemma2", "gemma3", "gpt2"])
def test_fused_forward_leaves_other_architectures_to_the_model(family) -> None:
    # Qwen3 normalises queries and keys, Gemma 2 has sliding windows and soft-capping: the
    # fused forward is transformers' Llama computation only.
    assert fused_forward(tiny_model(family)) is None
