"""The activation-level causal check: edit what the candidate's sites write along u while
generating, with hooks and no weight change.

If removing u from the residual-stream writes of the top candidate's sites (o_proj or down_proj
outputs of its layers) does not remove loops, no column edit along it will. Two doses:
projecting u out (strength 1) and the candidate's own alpha (> 1 reverses the component, as the
weight edit does). A random direction at the same sites and strength is the contrast: the check
passes when some dose removes loops significantly (paired, p < 0.05) and more of them than the
random direction does.

Why the sites and not each layer's whole output: on the default testbed, projecting u out of
the decoder-layer outputs at layers 0 and 2 left loops unchanged on one prompt set (5.6% ->
6.2%) while the same at the o_proj outputs removed most of them (5.6% -> 2.0%, p 0.004), and so
did the weight edit: the whole-stream version also removes what the other sublayers and the
embeddings carry, which no column edit of the site touches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from loopfix.patch import EditSite
from loopfix.patch.sites import SiteKind, site_module
from loopfix.repair.config import RepairConfig
from loopfix.repair.hooks import direction_ablation, hooked

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from loopfix.repair.verification import Verifier

__all__ = ["causal_check"]


def _ablate(
    verifier: Verifier[Any],
    modules: list[Any],
    vectors: list[torch.Tensor],
    strength: float,
    base: Any,
    label: str,
) -> dict[str, Any]:
    hooks = direction_ablation(modules, vectors, strength)
    outcomes = verifier.run(
        "causal", verifier.config.temperature, hooked(hooks), f"{label}-strength{strength:g}"
    )
    return {**outcomes.summary(), **verifier.compare(base, outcomes)}


def causal_check(
    verifier: Verifier[Any],
    model: PreTrainedModel,
    kind: SiteKind,
    layers: Sequence[int],
    alpha: float,
    directions: torch.Tensor,
    controls: torch.Tensor,
    config: RepairConfig,
) -> dict[str, Any]:
    base = verifier.base("causal", config.temperature)
    modules = [site_module(model, EditSite(layer, kind)) for layer in layers]
    doses = []
    for strength in sorted({1.0, float(alpha)}):
        direction, control = (
            _ablate(verifier, modules, [v[i].float() for i in layers], strength, base, label)
            for v, label in ((directions, "ablate-u"), (controls, "ablate-random"))
        )
        net = direction["loops_removed"] - direction["loops_added"]
        removes = (
            net > 0
            and direction["loop_mcnemar_p"] < 0.05
            and net > control["loops_removed"] - control["loops_added"]
        )
        doses.append(
            {
                "strength": strength,
                "direction": direction,
                "random": control,
                "removes_loops": removes,
            }
        )
    return {
        "site": kind,
        "layers": list(layers),
        "temperature": config.temperature,
        "base": base.summary(),
        "doses": doses,
        "summary": {
            "base_loop_rate": base.summary()["loop_rate"],
            "by_strength": {
                f"{dose['strength']:g}": {
                    "direction": dose["direction"]["loop_rate"],
                    "random": dose["random"]["loop_rate"],
                }
                for dose in doses
            },
            "removes_loops": any(dose["removes_loops"] for dose in doses),
        },
    }
