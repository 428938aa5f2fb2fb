import torch

from loopfix.models import tiny_model
from loopfix.patch import EditSite
from loopfix.patch.sites import site_module
from loopfix.repair.batches import make_batches
from loopfix.repair.probe import class_means, projections


def test_means_and_projections_match_hidden_states() -> None:
    model = tiny_model("qwen2", seed=3)
    generator = torch.Generator().manual_seed(1)
    items = [(torch.randint(3, 40, (9,), generator=generator).tolist(), [2, 5]) for _ in range(7)]
    batches = make_batches(items, batch_size=4, pad_id=0)
    site = EditSite(1, "down_proj")
    captured = []
    handle = site_module(model, site).register_forward_pre_hook(
        lambda module, inputs: captured.append(
            inputs[0][:, [2, 5]].reshape(-1, inputs[0].shape[-1])
        )
    )
    with torch.no_grad():
        ids = torch.tensor([ids for ids, _ in items])
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
    handle.remove()
    # hidden_states[1] is layer 0's output (the last entry has the final norm applied).
    layer0 = hidden[1][:, [2, 5]].reshape(-1, 64).double()
    means = class_means(model, batches, [site])
    assert means.count == 14
    assert means.residual is not None and means.residual.shape == (2, 64)
    torch.testing.assert_close(means.residual[0], layer0.mean(0), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        means.site_inputs[site], captured[0].double().mean(0), atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(
        means.site_variances[site], captured[0].double().var(0, correction=0), atol=1e-5, rtol=1e-4
    )
    u = torch.randn(64, generator=generator, dtype=torch.float64)
    projected = projections(model, batches, torch.stack([u, u]))
    assert projected.shape == (2, 14)
    torch.testing.assert_close(projected[0], layer0 @ u, atol=1e-5, rtol=1e-5)
