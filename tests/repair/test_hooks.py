import pytest
import torch

from loopfix.models import decoder_layers, tiny_model
from loopfix.repair.hooks import direction_ablation, hooked


def test_ablation_removes_the_direction_and_hooks_go_away_on_error() -> None:
    model = tiny_model("mistral", seed=5)
    layer = decoder_layers(model)[0]
    u = torch.nn.functional.normalize(torch.randn(64), dim=0)
    seen = []
    reader = decoder_layers(model)[1].register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(args[0] if args else kwargs["hidden_states"]),
        with_kwargs=True,
    )
    ids = torch.tensor([[3, 4, 5, 6]])
    with torch.no_grad(), hooked(direction_ablation([layer], [u])):
        model(input_ids=ids)
    assert torch.allclose(seen[-1] @ u, torch.zeros(1, 4), atol=1e-5)
    with pytest.raises(RuntimeError), torch.no_grad(), hooked(direction_ablation([layer], [u])):
        raise RuntimeError("stop")
    with torch.no_grad():
        model(input_ids=ids)
    reader.remove()
    assert not torch.allclose(seen[-1] @ u, torch.zeros(1, 4), atol=1e-3)
