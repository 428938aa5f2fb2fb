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

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from loopfix.patch import EditSite
from loopfix.patch.sites import SiteKind, site_module
from loopfix.repair.arms import ArmResult, ComparedArm
from loopfix.repair.hooks import direction_ablation, hooked
from loopfix.summaries import FlatRecord

if TYPE_CHECKING:
    from loopfix.repair.candidates import Candidate
    from loopfix.repair.verification import Verifier

__all__ = ["AblationDose", "CausalResult", "causal_check"]

# A dose removes loops when it does so significantly (paired) and more than the random direction.
SIGNIFICANCE = 0.05


@dataclass(frozen=True)
class AblationDose(FlatRecord):
    """u ablated at one strength, and a random direction at the same sites and strength, each
    paired with the base on the screening prompts."""

    strength: float
    direction: ComparedArm
    random: ComparedArm

    @property
    def removes_loops(self) -> bool:
        removed = self.direction.paired.loops_net
        return (
            removed > 0
            and self.direction.paired.loop_mcnemar_p < SIGNIFICANCE
            and removed > self.random.paired.loops_net
        )

    def to_json(self) -> dict[str, object]:
        return super().to_json() | {"removes_loops": self.removes_loops}


@dataclass(frozen=True)
class CausalResult(FlatRecord):
    """The activation-level check of the chosen candidate's sites (verify.json "causal")."""

    site: SiteKind
    layers: tuple[int, ...]
    temperature: float
    base: ArmResult
    doses: tuple[AblationDose, ...]

    @property
    def removes_loops(self) -> bool:
        return any(dose.removes_loops for dose in self.doses)

    def to_json(self) -> dict[str, object]:
        return {
            "site": self.site,
            "layers": list(self.layers),
            "temperature": self.temperature,
            "base": self.base.to_json(),
            "doses": [dose.to_json() for dose in self.doses],
            "summary": {
                "base_loop_rate": self.base.loop_rate,
                "by_strength": {
                    f"{dose.strength:g}": {
                        "direction": dose.direction.arm.loop_rate,
                        "random": dose.random.arm.loop_rate,
                    }
                    for dose in self.doses
                },
                "removes_loops": self.removes_loops,
            },
        }


def causal_check(
    verifier: Verifier, edit: Candidate, directions: torch.Tensor, random: torch.Tensor
) -> CausalResult:
    """`edit`'s sites ablated along `directions` and along `random` (per layer), on the
    verifier's model at the primary temperature, at strength 1 and at the edit's alpha."""
    temperature, layers = verifier.config.temperature, edit.layers
    base = verifier.base("causal", temperature)
    modules = [site_module(verifier.model, EditSite(layer, edit.kind)) for layer in layers]
    doses = []
    for strength in sorted({1.0, float(edit.alpha)}):
        arms = []
        for vectors, label in ((directions, "ablate-u"), (random, "ablate-random")):
            hooks = direction_ablation(modules, [vectors[i].float() for i in layers], strength)
            context, name = hooked(hooks), f"{label}-strength{strength:g}"
            arms.append(verifier.compare(base, verifier.run("causal", temperature, context, name)))
        doses.append(AblationDose(strength, *arms))
    return CausalResult(edit.kind, layers, temperature, base.summary(), tuple(doses))
