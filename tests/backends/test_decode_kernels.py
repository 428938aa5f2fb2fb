"""The fused forward's compiled kernels (`decode_kernels.c`) against transformers' own modules
and torch's attention, on random inputs of the shapes models have: compiled here with the
machine's C compiler, as the engine builds them."""

import logging

import pytest
import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import LlamaRMSNorm, apply_rotary_pos_emb

from loopfix.engine.fast import decode_kernels as kernels_module
from loopfix.engine.fast.decode_kernels import PackedRows, decode_kernels
from loopfix.engine.kv_batch import SpareLayer
from loopfix.models import CACHE_DIR_VARIABLE

DTYPES = [torch.float32, torch.bfloat16]
# (head size, query heads per kv head): the 8-lane build, SmolLM2's, and the testbed's.
SHAPES = [(8, 2), (64, 3), (32, 1)]


def _tolerance(dtype: torch.dtype) -> dict[str, float]:
    # float32: summation order only; bfloat16: a rounding step of the dtype (2^-8) either way.
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-2, "atol": 1e-2}


def _assert_rotated(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Keys as transformers rotates them: bfloat16 bit for bit (the kernel rounds where torch
    does); float32 up to the last bit (the compiler may fuse a product and a sum)."""
    if actual.dtype == torch.bfloat16:
        assert torch.equal(actual, expected)
    else:
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6)


def _kernels(head_dim: int, group: int, dtype: torch.dtype):
    kernels = decode_kernels(head_dim, group, dtype)
    assert kernels is not None, "this machine's C compiler builds the kernels"
    return kernels


def _angles(positions: torch.Tensor, head_dim: int, dtype: torch.dtype):
    """Rotary cos and sin (tokens, head size) as LlamaRotaryEmbedding makes them."""
    inverse = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = positions.float()[:, None] * inverse[None]
    both = torch.cat((angles, angles), dim=-1)
    return both.cos().to(dtype), both.sin().to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_adds_the_residual_in_place_and_normalizes_as_llama_does(dtype) -> None:
    torch.manual_seed(0)
    kernels = _kernels(64, 3, dtype)
    norm = LlamaRMSNorm(576, eps=1e-5).to(dtype)
    norm.weight.data = torch.randn(576).to(dtype)
    hidden, delta = torch.randn(5, 576).to(dtype), torch.randn(5, 576).to(dtype)
    expected_hidden = hidden + delta
    with torch.inference_mode():
        expected = norm(expected_hidden)
        normed = kernels.rms_norm(hidden, norm.weight, 1e-5, delta)
        assert torch.equal(hidden, expected_hidden)  # the residual stream, updated in place
        torch.testing.assert_close(normed, expected, **_tolerance(dtype))
        torch.testing.assert_close(kernels.rms_norm(hidden.clone(), norm.weight, 1e-5), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_mul_is_the_llama_mlp_activation(dtype) -> None:
    torch.manual_seed(1)
    kernels = _kernels(64, 3, dtype)
    gate_up = (torch.randn(7, 2 * 1536) * 6).to(dtype)  # well into both tails of the sigmoid
    gate, up = gate_up.chunk(2, dim=-1)
    torch.testing.assert_close(kernels.silu_mul(gate_up), F.silu(gate) * up, **_tolerance(dtype))


def _left_padded_mask(lengths: list[int]) -> torch.Tensor:
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        mask[row, mask.shape[1] - length :] = 1
    return mask


def _states(rows: int, kv_heads: int, group: int, head_dim: int, dtype: torch.dtype):
    return torch.randn(rows, (group + 2) * kv_heads * head_dim).to(dtype)


def _split(states: torch.Tensor, kv_heads: int, group: int, head_dim: int):
    """(queries, keys, values) as (tokens, heads, head size) from packed projections."""
    heads = kv_heads * group
    view = states.view(states.shape[0], heads + 2 * kv_heads, head_dim)
    return view[:, :heads], view[:, heads : heads + kv_heads], view[:, heads + kv_heads :]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("head_dim", "group"), SHAPES)
def test_a_decode_step_appends_rotated_keys_and_attends_like_sdpa(dtype, head_dim, group) -> None:
    torch.manual_seed(2)
    kernels = _kernels(head_dim, group, dtype)
    rows, kv_heads, cached = 4, 2, 150  # more cached positions than one block of 64
    layer = SpareLayer()
    layer.update(*(torch.randn(rows, kv_heads, cached, head_dim).to(dtype) for _ in range(2)))
    mask = torch.ones(rows, cached + 1, dtype=torch.long)
    mask[1, :70] = 0  # left padding, past a whole block
    mask[2, :3] = 0
    states = _states(rows, kv_heads, group, head_dim, dtype)
    positions = mask.sum(dim=1) - 1  # each row's own position of the new token
    cos, sin = _angles(positions, head_dim, dtype)
    out = kernels.attend(states, cos, sin, layer.append_slot(), mask, head_dim**-0.5)

    query, key, value = _split(states, kv_heads, group, head_dim)
    query, key = apply_rotary_pos_emb(query, key, cos, sin, unsqueeze_dim=1)
    _assert_rotated(layer.keys[:, :, cached], key)
    assert torch.equal(layer.values[:, :, cached], value)
    additive = torch.zeros(mask.shape).masked_fill(mask == 0, -torch.inf).to(dtype)
    expected = F.scaled_dot_product_attention(
        query[:, :, None],
        layer.keys,
        layer.values,
        attn_mask=additive[:, None, None],
        scale=head_dim**-0.5,
        enable_gqa=True,
    )
    torch.testing.assert_close(out, expected.reshape(rows, -1), **_tolerance(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("head_dim", "group"), SHAPES)
def test_a_packed_prefill_fills_the_left_padded_cache_and_attends_causally(
    dtype, head_dim, group
) -> None:
    torch.manual_seed(3)
    kernels = _kernels(head_dim, group, dtype)
    lengths, kv_heads = [5, 1, 80, 17], 2
    packed = PackedRows.of(_left_padded_mask(lengths))
    states = _states(sum(lengths), kv_heads, group, head_dim, dtype)
    cos, sin = _angles(packed.positions, head_dim, dtype)
    layer = SpareLayer()
    buffers = layer.hold_zeros(len(lengths), kv_heads, packed.width, head_dim, states)
    out = kernels.prefill_attend(states, cos, sin, buffers, packed, head_dim**-0.5)

    query, key, value = _split(states, kv_heads, group, head_dim)
    query, key = apply_rotary_pos_emb(query, key, cos, sin, unsqueeze_dim=1)
    start = 0
    for row, length in enumerate(lengths):
        tokens = slice(start, start + length)
        padding = packed.width - length
        assert not layer.keys[row, :, :padding].any() and not layer.values[row, :, :padding].any()
        _assert_rotated(layer.keys[row, :, padding:], key[tokens].transpose(0, 1))
        assert torch.equal(layer.values[row, :, padding:], value[tokens].transpose(0, 1))
        expected = F.scaled_dot_product_attention(
            query[tokens].transpose(0, 1),
            key[tokens].transpose(0, 1),
            value[tokens].transpose(0, 1),
            is_causal=True,
            scale=head_dim**-0.5,
            enable_gqa=True,
        )
        torch.testing.assert_close(
            out[tokens], expected.transpose(0, 1).reshape(length, -1), **_tolerance(dtype)
        )
        start += length


def test_inputs_of_another_dtype_or_shape_are_refused_before_any_memory_is_read() -> None:
    kernels = _kernels(64, 3, torch.float32)
    weight = torch.ones(576)
    with pytest.raises(ValueError, match="576-wide, torch.float32"):
        kernels.rms_norm(torch.ones(2, 576, dtype=torch.bfloat16), weight, 1e-5)
    with pytest.raises(ValueError, match="contiguous"):
        kernels.rms_norm(torch.ones(576, 2).t(), weight, 1e-5)
    layer = SpareLayer()
    layer.update(torch.zeros(2, 1, 4, 64), torch.zeros(2, 1, 4, 64))
    states, angles = torch.zeros(2, 5 * 64), torch.zeros(2, 64)
    with pytest.raises(ValueError, match="mask"):  # a mask one position short
        kernels.attend(states, angles, angles, layer.append_slot(), torch.ones(2, 4).long(), 1.0)
    with pytest.raises(ValueError, match="one token or more"):
        PackedRows.of(_left_padded_mask([3, 0]))


def test_without_a_compiler_there_are_no_kernels_and_a_note_says_so(
    monkeypatch, tmp_path, caplog
) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    decode_kernels.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=kernels_module.__name__):
            assert decode_kernels(64, 3, torch.float32) is None
        assert "no C compiler" in caplog.text
        assert not list(tmp_path.glob("kernels/*.so"))
        assert decode_kernels(64, 3, torch.float16) is None  # no float16 build at all
    finally:
        decode_kernels.cache_clear()


def test_an_unwritable_cache_means_no_kernels_not_an_error(monkeypatch, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(blocker))  # a file where the folder should be
    decode_kernels.cache_clear()
    try:
        assert decode_kernels(64, 3, torch.float32) is None
    finally:
        decode_kernels.cache_clear()


def test_a_compiler_without_openmp_builds_single_threaded_kernels(monkeypatch, tmp_path) -> None:
    compiler = tmp_path / "cc-without-openmp"
    compiler.write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = -fopenmp ] && exit 1; done\nexec cc "$@"\n'
    )
    compiler.chmod(0o755)
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(compiler))
    decode_kernels.cache_clear()
    try:
        kernels = _kernels(8, 2, torch.float32)
        gate_up = torch.randn(3, 16)
        expected = F.silu(gate_up[:, :8]) * gate_up[:, 8:]
        torch.testing.assert_close(kernels.silu_mul(gate_up), expected)
    finally:
        decode_kernels.cache_clear()


def test_a_build_is_cached_by_source_flags_compiler_and_cpu(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    decode_kernels.cache_clear()
    try:
        assert decode_kernels(16, 2, torch.float32) is not None
        built = list(tmp_path.glob("kernels/*.so"))
        assert len(built) == 1 and not list(tmp_path.glob("kernels/*.partial"))
        stamp = built[0].stat().st_mtime_ns
        decode_kernels.cache_clear()  # a new process: loads the built file, compiles nothing
        assert decode_kernels(16, 2, torch.float32) is not None
        assert list(tmp_path.glob("kernels/*.so")) == built
        assert built[0].stat().st_mtime_ns == stamp
        decode_kernels(16, 2, torch.bfloat16)  # another dtype is another build
        assert len(list(tmp_path.glob("kernels/*.so"))) == 2
    finally:
        decode_kernels.cache_clear()
