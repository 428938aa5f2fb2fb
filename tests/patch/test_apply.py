import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from loopfix.models import UnsupportedArchitectureError
from loopfix.patch import (
    EditSite,
    PatchMismatchError,
    apply_patch,
    build_patch,
    patched,
    revert_patch,
)
from loopfix.patch.format import Patch, PatchFormatError

from .helpers import fresh, requests_for


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def _equal(model: torch.nn.Module, snapshot: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(snapshot[name], t) for name, t in model.state_dict().items())


def test_apply_then_revert_is_bit_exact(family: str) -> None:
    model = fresh(family)
    original = _snapshot(model)
    patch = build_patch(model, requests_for(model))
    handle = apply_patch(model, patch)
    assert not _equal(model, original)
    changed = [name for name, t in model.state_dict().items() if not torch.equal(original[name], t)]
    assert sorted(changed) == sorted(edit.name for edit in patch.edits)
    handle.revert()
    assert _equal(model, original)
    handle.revert()  # a second revert is a no-op
    assert _equal(model, original)


def test_context_manager_reverts_when_the_body_fails() -> None:
    model = fresh("llama")
    original = _snapshot(model)
    patch = build_patch(model, requests_for(model))
    with pytest.raises(RuntimeError, match="boom"), patched(model, patch):
        assert not _equal(model, original)
        raise RuntimeError("boom")
    assert _equal(model, original)


def test_mismatched_model_is_refused_untouched() -> None:
    patch = build_patch(fresh("llama"), requests_for(fresh("llama")))
    other = fresh("llama")
    with torch.no_grad():
        other.get_parameter(patch.edits[1].name)[0, 0] += 1e-3
    original = _snapshot(other)
    with pytest.raises(PatchMismatchError, match="different model"):
        apply_patch(other, patch)
    assert _equal(other, original)  # the first edit (whose hash matched) was not written


def test_applying_twice_is_refused_as_already_applied() -> None:
    model = fresh("qwen3")
    patch = build_patch(model, requests_for(model))
    apply_patch(model, patch)
    with pytest.raises(PatchMismatchError, match="already applied"):
        apply_patch(model, patch)
    revert_patch(model, patch)
    with pytest.raises(PatchMismatchError, match="already reverted"):
        revert_patch(model, patch)


def test_failure_after_partial_writes_restores_every_tensor() -> None:
    """A corrupt "after" hash on the second edit fails the final check after both writes:
    the first edit's columns must be put back too, and the patch (not the model) is blamed."""
    model = fresh("gpt2")
    original = _snapshot(model)
    patch = build_patch(model, requests_for(model))
    corrupt = Patch(
        patch.base_model,
        (
            patch.edits[0],
            patch.edits[1].__class__(**{**patch.edits[1].__dict__, "sha256_after": "0" * 64}),
        ),
        patch.touched_parameters,
        patch.total_parameters,
    )
    with pytest.raises(PatchFormatError, match="the patch file is inconsistent"):
        apply_patch(model, corrupt)
    assert _equal(model, original)


def test_wrong_dtype_is_refused_with_advice() -> None:
    model = fresh("mistral")
    patch = build_patch(model, requests_for(model))
    with pytest.raises(PatchMismatchError, match="dtype"):
        apply_patch(model.to(torch.bfloat16), patch)


def test_bfloat16_round_trip_is_bit_exact() -> None:
    model = fresh("llama").to(torch.bfloat16)
    original = _snapshot(model)
    with patched(model, build_patch(model, requests_for(model))):
        assert not _equal(model, original)
    assert _equal(model, original)


def test_unsupported_family_is_refused_clearly() -> None:
    config = AutoConfig.for_model(
        "opt",
        hidden_size=16,
        ffn_dim=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        word_embed_proj_dim=16,
        vocab_size=32,
    )
    model = AutoModelForCausalLM.from_config(config)
    with pytest.raises(UnsupportedArchitectureError, match="'opt' is not in loopfix's"):
        build_patch(model, [requests_for(fresh("llama"))[0]])


def test_mixture_of_experts_is_refused() -> None:
    from loopfix.models import architecture_for, tiny_config

    config = tiny_config("qwen3_next")
    config.num_experts = 4
    with pytest.raises(UnsupportedArchitectureError, match="mixture of experts"):
        architecture_for(config)


def test_layer_outside_the_model_is_refused() -> None:
    model = fresh("llama")
    request = requests_for(model)[0]
    bad = request.__class__(EditSite(5, "down_proj"), request.direction, request.columns, 1.0)
    with pytest.raises(IndexError, match="outside"):
        build_patch(model, [bad])
