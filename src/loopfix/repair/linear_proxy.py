"""The selectivity proxy to first order, for every layer, site and k at once.

A candidate edits columns C of one site's write matrix W along the unit direction u:
W[:, j] <- W[:, j] - alpha * u * w_j with w_j = u^T W[:, j]. At every position p that changes
the site's output by -alpha * u * sum_{j in C} w_j x_pj (x: the site's input), so to first order
the mean target log-prob changes by

    d = -alpha * sum_{j in C} w_j * c_j,   c_j = sum_p (g_p . u) x_pj / targets,

where g_p is the gradient of the summed target log-probs with respect to the site's output at p.
One forward and backward pass per branch set gives c for every site of every layer, so ranking
the whole space (30 layers x 2 sites x every k) costs what scoring one candidate exactly costs;
the exact score (`scoring.Scorer`) then only runs on a shortlist. The KL is second order in the
edit and has no first-order term, so it stays with the exact scorer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from loopfix.models import architecture_for, write_matrix
from loopfix.patch import EditSite
from loopfix.patch.edit import write_strength
from loopfix.patch.sites import SiteKind, site_module
from loopfix.repair.batches import ProbeBatch
from loopfix.repair.candidates import Candidate, SearchRecord, candidate
from loopfix.repair.config import RepairConfig
from loopfix.repair.errors import RepairInputError
from loopfix.repair.hooks import hooked
from loopfix.summaries import FlatRecord

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["GRADIENT_TOKENS", "LinearProxy", "column_gains", "linear_candidates"]

# Ids per forward/backward pass of the gradients. The graph of a whole probe batch is the
# largest peak of a real model's repair (SmolLM2: 8 rows x 450 ids held 6.5 GiB, one row
# 1.8 GiB, at the same speed); the gains are sums over states, so row groups give the same.
GRADIENT_TOKENS = 1024


def column_gains(
    model: PreTrainedModel,
    batches: Sequence[ProbeBatch],
    directions: torch.Tensor,
    sites: Sequence[EditSite],
) -> dict[EditSite, torch.Tensor]:
    """Per site, c ([n_inputs], float64): the first-order change of the mean target log-prob
    per unit of -alpha * w_j on column j (see the module)."""
    gains = {site: torch.zeros(0, dtype=torch.float64) for site in sites}
    inputs: dict[EditSite, torch.Tensor] = {}

    def keep_input(site: EditSite) -> Any:
        def hook(module: Any, args: Any) -> None:
            inputs[site] = args[0].detach()

        return hook

    def watch_output(site: EditSite) -> Any:
        u = directions[site.layer]

        def on_grad(grad: torch.Tensor) -> None:
            along = grad.to(torch.float64) @ u.to(grad.device, torch.float64)  # [batch, length]
            total = torch.einsum("bt,btj->j", along, inputs[site].to(torch.float64)).cpu()
            gains[site] = total if gains[site].numel() == 0 else gains[site] + total

        def hook(module: Any, args: Any, output: torch.Tensor) -> None:
            output.register_hook(on_grad)

        return hook

    def needs_grad(module: Any, args: Any, output: torch.Tensor) -> torch.Tensor:
        # Weights stay frozen; the graph only has to reach the activations.
        return output.detach().requires_grad_(True)

    frozen = [p for p in model.parameters() if p.requires_grad]
    for parameter in frozen:
        parameter.requires_grad_(False)
    modules = {site: site_module(model, site) for site in sites}
    forward = [(model.get_input_embeddings(), needs_grad)]
    forward += [(modules[site], watch_output(site)) for site in sites]
    pre = [(modules[site], keep_input(site)) for site in sites]
    targets = sum(len(batch.targets) for batch in batches)
    try:
        with torch.enable_grad(), hooked(forward, pre):
            for batch in (chunk for whole in batches for chunk in whole.chunks(GRADIENT_TOKENS)):
                keep = torch.unique(batch.positions)
                logits = model(
                    input_ids=batch.ids.to(model.device), logits_to_keep=keep.to(model.device)
                ).logits
                columns = torch.searchsorted(keep, batch.positions).to(model.device)
                states = logits[batch.rows.to(model.device), columns]
                logprobs = torch.log_softmax(states.float(), -1)
                logprobs.gather(1, batch.targets[:, None].to(model.device)).sum().backward()
                inputs.clear()
    finally:
        for parameter in frozen:
            parameter.requires_grad_(True)
    return {site: gain / targets for site, gain in gains.items()}


@dataclass(frozen=True)
class LinearProxy:
    """First-order d_rep and d_prod per unit alpha for any (site, columns)."""

    rep: dict[EditSite, torch.Tensor]
    prod: dict[EditSite, torch.Tensor]
    strengths: dict[EditSite, torch.Tensor]  # w = u^T W per column
    directions: torch.Tensor

    @classmethod
    def measure(
        cls,
        model: PreTrainedModel,
        repetitive: Sequence[ProbeBatch],
        productive: Sequence[ProbeBatch],
        directions: torch.Tensor,
        sites: Sequence[EditSite],
    ) -> LinearProxy:
        orientation = architecture_for(model).orientation
        strengths = {
            site: write_strength(
                write_matrix(site_module(model, site), orientation), directions[site.layer]
            ).cpu()
            for site in sites
        }
        return cls(
            column_gains(model, repetitive, directions, sites),
            column_gains(model, productive, directions, sites),
            strengths,
            directions,
        )

    def columns(self, site: EditSite, k: int) -> torch.Tensor:
        """The candidate's columns: the k largest |w_j| (the rule `candidates` uses)."""
        return torch.sort(torch.topk(self.strengths[site].abs(), k).indices).values

    def score(self, site: EditSite, k: int, alpha: float) -> tuple[float, float]:
        """(d_rep, d_prod) to first order for the top-k columns at strength alpha."""
        columns = self.columns(site, k)
        w = self.strengths[site][columns]
        return (
            float(-alpha * (w * self.rep[site][columns]).sum()),
            float(-alpha * (w * self.prod[site][columns]).sum()),
        )


@dataclass(frozen=True)
class _FirstOrder(FlatRecord):
    """One (site, layer, k) edit's first-order proxy per unit alpha."""

    site: SiteKind
    layer: int
    k: int
    d_rep: float
    d_prod: float

    @property
    def selectivity(self) -> float:
        return self.d_prod - self.d_rep

    def to_json(self) -> dict[str, object]:
        return super().to_json() | {"selectivity": self.selectivity}


def linear_candidates(
    model: PreTrainedModel,
    directions: torch.Tensor,
    proxy: LinearProxy,
    config: RepairConfig,
    budget: float,
) -> tuple[list[Candidate], SearchRecord]:
    """`search="linear"`: every (site, layer, k) ranked by first-order selectivity per unit
    alpha; screened: the `verify_top` best and the two-layer edit of the best one's layer with
    the next best layer of the same site and k (the source case's shape), each at every alpha
    (to first order the proxy is linear in alpha and the KL has no first-order term, so only
    generation can choose the strength), within `budget` touched weights. Best first."""
    rows = [
        _FirstOrder(site.kind, site.layer, k, *proxy.score(site, k, 1.0))
        for site in proxy.strengths
        if site.kind in config.sites
        for k in config.ks
    ]
    rows.sort(key=lambda row: -row.selectivity)
    structures: list[tuple[SiteKind, tuple[int, ...], int]] = [
        (row.site, (row.layer,), row.k) for row in rows[: config.verify_top]
    ]
    best = rows[0]
    second = next(
        (
            row
            for row in rows[1:]
            if (row.site, row.k) == (best.site, best.k) and row.layer != best.layer
        ),
        None,
    )
    if second is not None:
        structures.append((best.site, tuple(sorted((best.layer, second.layer))), best.k))
    screened = [
        edit
        for kind, layers, k in structures
        for alpha in config.alphas
        for edit in [candidate(model, directions, kind, layers, k, alpha)]
        if edit.touched <= budget
    ]
    if not screened:
        raise RepairInputError(
            f"no candidate edit of the first-order ranking touches at most "
            f"{config.max_touched_fraction:g} of the weights: lower --ks or raise "
            "--max-touched-fraction"
        )
    return screened, SearchRecord("linear", len(rows), tuple(row.to_json() for row in rows[:10]))
