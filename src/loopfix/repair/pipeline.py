"""`run_repair`: find a loop direction, edit a few columns, prove it helps, write the patch.

Steps (each prints its time and the peak memory so far):
1. branches: matched pairs (equal length, no EOS), normal text for the KL check and the
   verification's prompt sets, from a source (`sources/`): the testbed teacher (copy the last
   excursion vs explore), or scan records (the loop vs a non-looping resample, vs the engine's
   rescue, or looping vs converging runs), training and held-out prompts kept apart.
2. probe + directions: per layer u = normalise(mean repetitive - mean productive) over the
   training pairs' states, with the separation along u and cosines between layers.
3. search: on the testbed every candidate (site x layer set x k x alpha) on the layers of
   largest separation scored without generating on the held-out pairs (selectivity proxy) and
   normal walks (KL), from cached prefixes; from scan records every layer x site x k ranked by
   the proxy to first order (`linear_proxy`), its best few at every alpha to screen.
4. screen the candidates by generation at the primary temperature on the screening prompts,
   each with its perplexity on the plain text: the pick stays within that budget.
5. causal check: remove u from what the chosen candidate's sites write, with hooks during
   generation; a column edit is only worth keeping if this removes loops.
6. verify: the chosen candidate and its norm-matched random controls at every temperature on
   held-out prompts, paired with the base.
7. decide and write: accept by answers recovered or by loops removed, within the KL, touched
   weights and perplexity budgets (`decide`, whose docstring holds both routes); write the
   patch (or the rejected candidate), verify.json and report.md.
A screening pick that already fails (over budget, losing answers, or removing nothing) stops
the repair after step 4 with the reason: nothing is verified that cannot be accepted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from loopfix.atomic import check_output_path, write_json_atomic, write_text_atomic
from loopfix.models import architecture_for, decoder_layers, load_model, write_matrix
from loopfix.models.modules import num_layers, residual_width
from loopfix.patch import EditSite, build_patch, save_patch
from loopfix.patch.edit import write_strength
from loopfix.patch.sites import site_module
from loopfix.repair.arms import ScreenRow
from loopfix.repair.batches import branch_batches, walk_batches
from loopfix.repair.candidates import (
    Candidate,
    SearchRecord,
    candidate_grid,
    edit_norm,
    norm_matched_control,
)
from loopfix.repair.causal import causal_check
from loopfix.repair.config import RepairConfig
from loopfix.repair.decide import judge
from loopfix.repair.directions import (
    LayerDirections,
    layer_directions,
    mean_difference_directions,
    random_directions,
)
from loopfix.repair.linear_proxy import LinearProxy, linear_candidates
from loopfix.repair.optuna_search import optuna_search
from loopfix.repair.perplexity import general_ability
from loopfix.repair.probe import ClassMeans, class_means, projections
from loopfix.repair.report import render_report
from loopfix.repair.result import RepairResult, ScoredEdit, Timing, Verified
from loopfix.repair.scan_verify import ScanPrompts
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.sources import BranchPair, RepairSource, source_for
from loopfix.repair.sources.base import SourceInputs
from loopfix.repair.verdict import screening_verdict, verdict
from loopfix.repair.verification import Verifier
from loopfix.stages import StageClock

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["SiteContribution", "find_directions", "rank_candidates", "run_repair"]


@dataclass(frozen=True)
class SiteContribution:
    """How much of the mean difference along u an edit site writes, and how much of that its
    eight strongest columns write."""

    site: EditSite
    writes_along_u: float
    share_of_top8_columns: float

    def to_json(self) -> dict[str, object]:
        return {
            "layer": self.site.layer,
            "site": self.site.kind,
            "writes_along_u": self.writes_along_u,
            "share_of_top8_columns": self.share_of_top8_columns,
        }


def find_directions(
    model: PreTrainedModel, pairs: list[BranchPair], config: RepairConfig, pad_id: int
) -> tuple[LayerDirections, list[SiteContribution]]:
    """Per-layer directions, and per edit site how much of the mean difference along u it
    writes (its inputs' mean difference times each column's u^T W, summed)."""
    sites = [EditSite(layer, kind) for layer in range(num_layers(model)) for kind in config.sites]
    batches = {
        which: branch_batches(pairs, which, config.positions, config.batch_size, pad_id)
        for which in ("repetitive", "productive")
    }
    means = {which: class_means(model, b, sites) for which, b in batches.items()}
    difference = mean_difference_directions(means["repetitive"], means["productive"])
    unit = difference / difference.norm(dim=1, keepdim=True)
    rep = projections(model, batches["repetitive"], unit)
    prod = projections(model, batches["productive"], unit)
    return layer_directions(difference, rep, prod), site_contributions(model, means, unit, sites)


def site_contributions(
    model: PreTrainedModel,
    means: dict[str, ClassMeans],
    unit: torch.Tensor,
    sites: list[EditSite],
) -> list[SiteContribution]:
    rows = []
    for site in sites:
        write = write_matrix(site_module(model, site), architecture_for(model).orientation)
        strength = write_strength(write, unit[site.layer])
        delta = means["repetitive"].site_inputs[site] - means["productive"].site_inputs[site]
        per_column = delta * strength
        top8 = per_column.abs().topk(min(8, per_column.numel())).values.sum()
        rows.append(
            SiteContribution(site, float(per_column.sum()), float(top8 / per_column.abs().sum()))
        )
    return rows


def rank_candidates(
    scored: list[tuple[Candidate, ProxyScore]], max_kl: float
) -> list[tuple[Candidate, ProxyScore]]:
    """Within the KL budget and lowering the repetitive branches first, by selectivity;
    the rest after, by selectivity too (so a report can show why nothing qualified)."""

    def key(item: tuple[Candidate, ProxyScore]) -> tuple[bool, float]:
        score = item[1]
        return (not (score.kl <= max_kl and score.d_rep < 0), -score.selectivity)

    return sorted(scored, key=key)


def _search(
    model: PreTrainedModel,
    directions: LayerDirections,
    scorer: Callable[[], Scorer],
    proxy: Callable[[], LinearProxy],
    config: RepairConfig,
) -> tuple[list[Candidate], SearchRecord]:
    """The candidates screened by generation, best first, and what the search saw: the one
    place where `config.search` picks the grid, the optuna search or the first-order ranking
    (`proxy` measures the latter's gradients, only when it runs)."""
    budget = config.max_touched_fraction * sum(p.numel() for p in model.parameters())
    if config.search == "linear":
        return linear_candidates(model, directions.vectors, proxy(), config, budget)
    order = sorted(range(len(directions.separations)), key=lambda i: -directions.separations[i])
    layers = order[: config.search_layers]
    if config.search == "optuna":
        front, rest = optuna_search(model, directions.vectors, layers, budget, scorer(), config)
        # The front first: screening then compares different selectivity/KL trade-offs rather
        # than near-copies of the most selective trial.
        ranked = rank_candidates(front, config.max_kl) + rank_candidates(rest, config.max_kl)
    else:
        grid = candidate_grid(
            model,
            directions.vectors,
            config.sites,
            layers,
            config.max_layers,
            config.ks,
            config.alphas,
            budget,
        )
        ranked = rank_candidates(
            [(c, scorer().score(build_patch(model, c.requests))) for c in grid], config.max_kl
        )
    top = tuple(c.shape.to_json() | s.to_dict() for c, s in ranked[:10])
    record = SearchRecord(config.search, len(ranked), top)
    return [c for c, _ in ranked[: config.verify_top]], record


def run_repair(
    model_spec: str,
    out: Path | str,
    config: RepairConfig | None = None,
    report: Callable[[str], None] = print,
    trust_remote_code: bool = False,
    source: RepairSource | None = None,
) -> RepairResult:
    """Repair `model_spec`'s loops into `out` (patch, verify.json, report.md). `source` builds
    the branches, normal text and prompt sets; None: the one `config.source` names."""
    out = Path(out)
    check_output_path(out, folder=True)
    config = config or RepairConfig()
    source = source or source_for(config)  # a bad choice fails before the model is loaded
    clock = StageClock(report)
    with clock.stage("load"):
        model, tokenizer = load_model(model_spec, device="cpu", trust_remote_code=trust_remote_code)
        # Generation (scans, pairs, every arm) in `generation_dtype`; edits are built, probed
        # and scored on the float32 model, whose columns the patch records.
        dtype = config.generation_dtype
        generator = (
            model
            if dtype == "float32"
            else load_model(
                model_spec, device="cpu", dtype=dtype, trust_remote_code=trust_remote_code
            )[0]
        )
    inputs = source.build(generator, tokenizer, model_spec, out, config, clock)
    config, heldout, pad_id = inputs.config, inputs.heldout, inputs.pad_id
    with clock.stage("probe+directions"):
        directions, contributions = find_directions(model, inputs.train, config, pad_id)
    with clock.stage("search"):
        rep, prod = (
            branch_batches(heldout, which, config.positions, config.batch_size, pad_id)
            for which in ("repetitive", "productive")
        )
        normal = walk_batches(inputs.normal, config.batch_size, pad_id, config.kl_positions)
        # Built when first asked for: the first-order search's gradients (the largest peak of a
        # real model's repair) then run before the scorer's base log-probs are held.
        scorer = cache(lambda: Scorer(model, rep, prod, normal))
        sites = [
            EditSite(layer, kind) for layer in range(num_layers(model)) for kind in config.sites
        ]
        screened, search = _search(
            model,
            directions,
            scorer,
            lambda: LinearProxy.measure(model, rep, prod, directions.vectors, sites),
            config,
        )
    report(f"search ({search.method}): {len(screened)} to screen, first {screened[0].label()}")
    controls = [
        random_directions(len(decoder_layers(model)), residual_width(model), seed)
        for seed in range(config.control_seed, config.control_seed + config.control_seeds)
    ]
    prompts = ScanPrompts(
        generator, tokenizer, inputs.scan, inputs.prompt_sets, config, out / "verification", report
    )
    verifier = Verifier(generator, prompts, config)
    with clock.stage("screen"):
        ability = general_ability(model, tokenizer, config)
        best, screening = verifier.screen(screened, ability)
        chosen, stop = screened[best], verifier.screening_failures(screening[best])
    if stop and not config.verify_screened_out:
        return _stopped(
            model, model_spec, chosen, best, stop, screening, inputs, search, config, out, clock
        )
    with clock.stage("causal check"):
        # On the screening's pick at its own strength: whether removing u from what those sites
        # write, with hooks and no weight change, removes loops where the edit is kept.
        causal = causal_check(
            verifier,
            generator,
            chosen.kind,
            chosen.layers,
            chosen.alpha,
            directions.vectors,
            controls[0],
            config,
        )
    report(f"causal check: {json.dumps(causal.to_json()['summary'])}")
    with clock.stage("verify"):
        control_edits = [norm_matched_control(model, chosen, c) for c in controls]
        verification = verifier.full(chosen, control_edits)
    with clock.stage("perplexity"):
        perplexity = None if ability is None else ability.of(chosen.requests)
    with clock.stage("score"):  # the exact proxy and KL of the chosen edit and its control
        candidate = _scored(model, chosen, scorer())
        control = _scored(model, control_edits[0], scorer())
        assert candidate.proxy is not None and control.proxy is not None
        decision = judge(
            verification,
            causal,
            candidate.proxy.kl,
            build_patch(model, chosen.requests).touched_fraction,
            perplexity,
            config,
        )
    layers = {"layers": directions.to_dict(), "sites": [c.to_json() for c in contributions]}
    verified = Verified(decision, control, control.proxy.kl, causal, layers)
    result = RepairResult(
        model=model_spec,
        verdict=verdict(chosen.label(), decision, config),
        temperature=decision.temperature,
        n=decision.primary.base.n,
        touched_fraction=decision.touched_fraction,
        candidate=candidate,
        source=inputs.description,
        search=search,
        screening=tuple(screening),
        config=config.model_dump(mode="json"),
        verified=verified,
        patch=None,
        timing=Timing.of(clock),
        folder=out,
    )
    with clock.stage("write"):
        result = replace(result, patch=_write(model, model_spec, chosen, result, directions, out))
    return _written(replace(result, timing=Timing.of(clock)))


def _scored(model: PreTrainedModel, edit: Candidate, scorer: Scorer) -> ScoredEdit:
    return ScoredEdit(
        edit.shape, scorer.score(build_patch(model, edit.requests)), edit_norm(model, edit.requests)
    )


def _written(result: RepairResult) -> RepairResult:
    write_json_atomic(result.verify_json, result.to_json())
    write_text_atomic(result.report, render_report(result))
    return result


def _stopped(
    model: PreTrainedModel,
    model_spec: str,
    chosen: Candidate,
    best: int,
    reasons: list[str],
    screening: list[ScreenRow],
    inputs: SourceInputs,
    search: SearchRecord,
    config: RepairConfig,
    out: Path,
    clock: StageClock,
) -> RepairResult:
    """verify.json and report.md of a repair stopped at screening: the reasons, the screening
    table, no verified arm and no patch."""
    return _written(
        RepairResult(
            model=model_spec,
            verdict=screening_verdict(screening, best, reasons, config),
            temperature=config.temperature,
            n=screening[0].compared.arm.n,
            touched_fraction=build_patch(model, chosen.requests).touched_fraction,
            candidate=ScoredEdit(chosen.shape),
            source=inputs.description,
            search=search,
            screening=tuple(screening),
            config=config.model_dump(mode="json"),
            verified=None,
            patch=None,
            timing=Timing.of(clock),
            folder=out,
        )
    )


def _write(
    model: PreTrainedModel,
    model_spec: str,
    chosen: Candidate,
    result: RepairResult,
    directions: LayerDirections,
    out: Path,
) -> Path:
    """The patch (OUT, or OUT/rejected_candidate when rejected) with the numbers behind it."""
    verified = result.to_json()
    metrics = {
        key: verified[key]
        for key in (
            "accepted",
            "kl",
            "rescues",
            "regressions",
            "touched_fraction",
            "base",
            "patched",
            "random_control",
        )
    }
    provenance = {
        "method": result.source.method,
        "candidate": chosen.shape.to_json(),
        "separations": [directions.separations[layer] for layer in chosen.layers],
        "config": result.config,
    }
    patch = build_patch(
        model, chosen.requests, model_id=model_spec, metrics=metrics, provenance=provenance
    )
    folder = Path(out) if result.accepted else Path(out) / "rejected_candidate"
    save_patch(patch, folder)
    return folder / "patch.json"
