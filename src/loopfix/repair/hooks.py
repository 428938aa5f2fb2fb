"""Forward hooks with guaranteed removal, and the module lookups the probes need."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

__all__ = ["direction_ablation", "hooked", "layer_output"]


def layer_output(output: Any) -> torch.Tensor:
    """A decoder layer's hidden states, whether it returns a tensor or a tuple."""
    return output[0] if isinstance(output, tuple) else output


@contextmanager
def hooked(
    forward_hooks: Sequence[tuple[nn.Module, Callable[..., Any]]] = (),
    pre_hooks: Sequence[tuple[nn.Module, Callable[..., Any]]] = (),
) -> Iterator[None]:
    """Attach hooks for the body only; every hook is removed even when attaching fails."""
    handles = []
    try:
        for module, hook in forward_hooks:
            handles.append(module.register_forward_hook(hook))
        for module, hook in pre_hooks:
            handles.append(module.register_forward_pre_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def direction_ablation(
    modules: Sequence[nn.Module], directions: Sequence[torch.Tensor], strength: float = 1.0
) -> list[tuple[nn.Module, Callable[..., Any]]]:
    """Forward hooks that remove `strength` x the component along u from each module's output
    at every position (strength 1 projects u out, 2 reverses it). On an edit site (o_proj,
    down_proj) this is the activation-level twin of the weight edit over all its columns; on a
    decoder layer it edits the whole residual stream."""

    def make(direction: torch.Tensor) -> Callable[..., Any]:
        def hook(module: nn.Module, inputs: Any, output: Any) -> Any:
            hidden = layer_output(output)
            u = direction.to(hidden.device, hidden.dtype)
            edited = hidden - strength * (hidden @ u)[..., None] * u
            return (edited, *output[1:]) if isinstance(output, tuple) else edited

        return hook

    return [(module, make(u)) for module, u in zip(modules, directions, strict=True)]
