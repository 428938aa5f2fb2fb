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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from loopfix.atomic import check_output_path, write_json_atomic, write_text_atomic
from loopfix.models import architecture_for, decoder_layers, load_model, write_matrix
from loopfix.models.modules import num_layers, residual_width
from loopfix.patch import EditSite, build_patch, save_patch
from loopfix.patch.edit import write_strength
from loopfix.patch.sites import site_module
from loopfix.repair.batches import branch_batches, walk_batches
from loopfix.repair.candidates import Candidate, candidate_grid, norm_matched_control
from loopfix.repair.causal import causal_check
from loopfix.repair.config import RepairConfig
from loopfix.repair.decide import decide
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
from loopfix.repair.result import ARMS, RepairResult
from loopfix.repair.scan_verify import ScanPrompts
from loopfix.repair.scoring import ProxyScore, Scorer
from loopfix.repair.sources import BranchPair, RepairSource, source_for
from loopfix.repair.sources.base import SourceInputs
from loopfix.repair.verdict import screening_verdict
from loopfix.repair.verification import Verifier
from loopfix.stages import StageClock

if TYPE_CHECKING:
    from transformers import PreTrainedModel

__all__ = ["find_directions", "rank_candidates", "run_repair"]


def find_directions(
    model: PreTrainedModel, pairs: list[BranchPair], config: RepairConfig, pad_id: int
) -> tuple[LayerDirections, list[dict[str, Any]]]:
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
) -> list[dict[str, Any]]:
    rows = []
    for site in sites:
        write = write_matrix(site_module(model, site), architecture_for(model).orientation)
        strength = write_strength(write, unit[site.layer])
        delta = means["repetitive"].site_inputs[site] - means["productive"].site_inputs[site]
        per_column = delta * strength
        rows.append(
            {
                "layer": site.layer,
                "site": site.kind,
                "writes_along_u": float(per_column.sum()),
                "share_of_top8_columns": float(
                    per_column.abs().topk(min(8, per_column.numel())).values.sum()
                    / per_column.abs().sum()
                ),
            }
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
) -> tuple[list[Candidate], dict[str, Any]]:
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
    record = {
        "method": config.search,
        "candidates": len(ranked),
        "top": [{**c.to_dict(), **s.to_dict()} for c, s in ranked[:10]],
    }
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
    report(f"search ({search['method']}): {len(screened)} to screen, first {screened[0].label()}")
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
    report(f"causal check: {json.dumps(causal['summary'])}")
    with clock.stage("verify"):
        control_edits = [norm_matched_control(model, chosen, c) for c in controls]
        verification = verifier.full(chosen, control_edits)
    with clock.stage("perplexity"):
        perplexity = None if ability is None else ability.of(chosen.requests)
    with clock.stage("score"):  # the exact proxy and KL of the chosen edit and its control
        result = decide(
            model,
            chosen,
            scorer().score(build_patch(model, chosen.requests)),
            control_edits[0],
            scorer(),
            verification,
            causal,
            config,
            perplexity,
        )
    result.update(
        model=model_spec,
        branches=inputs.description,
        directions={"layers": directions.to_dict(), "sites": contributions},
        search=search,
        screening=screening,
        config=config.model_dump(mode="json"),
    )
    with clock.stage("write"):
        _write(model, model_spec, chosen, result, directions, out)
    result["timing"] = clock.to_dict()
    write_json_atomic(out / "verify.json", result)
    write_text_atomic(out / "report.md", render_report(result))
    return RepairResult.from_verify(result, out)


def _stopped(
    model: PreTrainedModel,
    model_spec: str,
    chosen: Candidate,
    best: int,
    reasons: list[str],
    screening: list[dict[str, Any]],
    inputs: SourceInputs,
    search: dict[str, Any],
    config: RepairConfig,
    out: Path,
    clock: StageClock,
) -> RepairResult:
    """verify.json and report.md of a repair stopped at screening: the reasons, the screening
    table, no verified arm and no patch."""
    result = {
        "model": model_spec,
        "accepted": False,
        "stopped_at": "screen",
        "verdict": screening_verdict(screening, best, reasons, config),
        "checks": {},
        "temperature": config.temperature,
        "n": screening[0]["n"],
        **{arm: None for arm in ARMS},
        "by_temperature": {},
        "answers": {},
        "routes_passed": [],
        "kl": None,
        "touched_fraction": build_patch(model, chosen.requests).touched_fraction,
        "candidate": {**chosen.to_dict(), "label": chosen.label()},
        "branches": inputs.description,
        "search": search,
        "screening": screening,
        "config": config.model_dump(mode="json"),
        "patch": None,
        "timing": clock.to_dict(),
    }
    write_json_atomic(out / "verify.json", result)
    write_text_atomic(out / "report.md", render_report(result))
    return RepairResult.from_verify(result, out)


def _write(
    model: PreTrainedModel,
    model_spec: str,
    chosen: Candidate,
    result: dict[str, Any],
    directions: LayerDirections,
    out: Path,
) -> None:
    metrics = {
        key: result[key]
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
        "method": result["branches"]["method"],
        "candidate": chosen.to_dict(),
        "separations": [directions.separations[layer] for layer in chosen.layers],
        "config": result["config"],
    }
    patch = build_patch(
        model, chosen.requests, model_id=model_spec, metrics=metrics, provenance=provenance
    )
    folder = Path(out) if result["accepted"] else Path(out) / "rejected_candidate"
    save_patch(patch, folder)
    result["patch"] = str(folder / "patch.json")
