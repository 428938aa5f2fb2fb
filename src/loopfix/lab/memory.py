"""A visited-set memory (seed 001, 4.2: "a subgraph memory unit: a module between the layers that
explicitly records the visited reasoning path"): every node token of the walk gets a learned
marker vector added to its input embedding, so the nodes the walk has visited are keys that
every layer can find as the visited set, apart from the same nodes' occurrences in the prompt.

Whether a position is in the walk follows from its position alone (the prompt of G(k, d) is
`stargraph.prompt_length(k, d)` tokens), and whether it is a node from its token, so the marker
needs no state: training, the teacher-forced probe and cached generation (which passes only the
new tokens, with their positions) mark alike. The marker is saved in the model's config
(`loopfix_visited_memory`), so a plain Llama checkpoint carries it; `use_visited_memory` puts it
back on a loaded model. A forward pre-hook adds it, so the engine's fused decode path (which
serves hook-free models only) steps aside and generation runs the model's own forward.
"""

from __future__ import annotations

from typing import Any

import torch

from loopfix.lab.stargraph import NODE_NAMES

__all__ = [
    "MEMORY_KEY",
    "add_visited_memory",
    "store_marker",
    "use_visited_memory",
    "visited_marks",
]

MEMORY_KEY = "loopfix_visited_memory"  # the model config's {"walk_start": P, "marker": [...]}


def visited_marks(ids: torch.Tensor, positions: torch.Tensor, walk_start: int) -> torch.Tensor:
    """Which tokens the memory marks: the node tokens at or after the walk's first position."""
    return (ids < len(NODE_NAMES)) & (positions >= walk_start)


def _positions(ids: torch.Tensor, kwargs: dict[str, Any]) -> torch.Tensor:
    """The tokens' positions: as given (the engine gives them, for its left padding), else
    counted on from what the cache already holds."""
    if kwargs.get("position_ids") is not None:
        return kwargs["position_ids"]
    cache = kwargs.get("cache")
    start = 0 if cache is None else cache.get_seq_length()
    return torch.arange(start, start + ids.shape[1], device=ids.device).unsqueeze(0)


def _attach(model: torch.nn.Module, marker: torch.nn.Parameter, walk_start: int) -> None:
    decoder: Any = model.model  # a Llama's decoder

    def mark(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        ids = kwargs.get("input_ids")
        if ids is None:
            return None
        embeds = decoder.embed_tokens(ids)
        marks = visited_marks(ids, _positions(ids, kwargs), walk_start)
        embeds = embeds + marks.unsqueeze(-1).to(embeds.dtype) * marker.to(embeds.dtype)
        return args, {**kwargs, "input_ids": None, "inputs_embeds": embeds}

    decoder.register_forward_pre_hook(mark, with_kwargs=True)


def add_visited_memory(model: torch.nn.Module, walk_start: int) -> torch.nn.Parameter:
    """Give a freshly built model the memory; returns its marker for the optimizer."""
    config: Any = model.config
    marker = torch.nn.Parameter(torch.randn(config.hidden_size) * config.initializer_range)
    _attach(model, marker, walk_start)
    store_marker(model, marker, walk_start)
    return marker


def store_marker(model: torch.nn.Module, marker: torch.Tensor, walk_start: int) -> None:
    """Write the marker's current values into the config (saved with the checkpoint)."""
    values = [float(v) for v in marker.detach().float()]
    setattr(model.config, MEMORY_KEY, {"walk_start": walk_start, "marker": values})


def use_visited_memory(model: torch.nn.Module) -> None:
    """Put the memory back on a loaded model whose config carries it (else leave it)."""
    memory = getattr(model.config, MEMORY_KEY, None)
    if memory is None:
        return
    marker = torch.nn.Parameter(torch.tensor(memory["marker"]), requires_grad=False)
    _attach(model, marker.to(model.device), memory["walk_start"])  # type: ignore[arg-type]
