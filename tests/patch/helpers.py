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


def smollm2_requests(
    model: torch.nn.Module, layers: tuple[int, ...] = (4, 20), k: int = 16, alpha: float = 1.0
) -> list[EditRequest]:
    """A real-sized patch on SmolLM2: the k down_proj columns of each layer that write most
    along a seeded direction, edited along it (a stand-in for a repair's direction)."""
    from loopfix.models import down_proj, write_matrix
    from loopfix.patch.edit import top_columns

    generator = torch.Generator().manual_seed(0)
    requests = []
    for layer in layers:
        direction = torch.randn(model.config.hidden_size, generator=generator)
        write = write_matrix(down_proj(model, layer), "out_in")
        columns = top_columns(write, direction, k)
        requests.append(EditRequest(EditSite(layer, "down_proj"), direction, columns, alpha))
    return requests
