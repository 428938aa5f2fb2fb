import torch

from loopfix.models import tiny_model
from loopfix.patch import EditRequest, EditSite


def requests_for(model: torch.nn.Module, k: int = 5, alpha: float = 6.0) -> list[EditRequest]:
    """An edit on the MLP of layer 0 and on the token mixer of layer 1 (seeded directions)."""
    generator = torch.Generator().manual_seed(7)
    width = model.config.get_text_config(decoder=True).hidden_size
    sites = [EditSite(0, "down_proj"), EditSite(1, "attn_out")]
    return [
        EditRequest(
            site, torch.randn(width, generator=generator), torch.tensor([0, 3, 4, 9, 11][:k]), alpha
        )
        for site in sites
    ]


def fresh(family: str) -> torch.nn.Module:
    return tiny_model(family, seed=1)
