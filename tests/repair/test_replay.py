import pytest
import torch

from loopfix.models import supported_families, tiny_model
from loopfix.patch import EditRequest, EditSite, build_patch, patched
from loopfix.repair.batches import make_batches
from loopfix.repair.replay import PrefixCache, readout_logprobs


@pytest.mark.parametrize("family", supported_families())
def test_cached_prefix_gives_the_full_forward_for_an_edit_at_or_after_start(family: str) -> None:
    model = tiny_model(family, seed=2)
    generator = torch.Generator().manual_seed(0)
    items = [
        (torch.randint(3, 40, (12,), generator=generator).tolist(), [3, 7, 10]) for _ in range(5)
    ]
    batches = make_batches(items, batch_size=3, pad_id=0)
    cache = PrefixCache(model, batches, start=1)
    width = model.config.get_text_config(decoder=True).hidden_size
    request = EditRequest(
        EditSite(1, "attn_out"), torch.randn(width, generator=generator), torch.arange(6), 4.0
    )
    base = readout_logprobs(model, batches)
    with patched(model, build_patch(model, [request])):
        full = readout_logprobs(model, batches)
        replayed = readout_logprobs(model, batches, cache)
    for a, b, c in zip(full, replayed, base, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(a, c)  # the edit mattered
    # The original layers are back in place afterwards.
    assert all(
        torch.equal(x, y) for x, y in zip(readout_logprobs(model, batches), base, strict=True)
    )
