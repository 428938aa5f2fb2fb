"""`run_repair`: find a loop direction, edit a few columns, prove it helps, write the patch.

Eight steps, each a function of typed values returning one (a frozen dataclass), in this order
(steps 2 and 3, where the loop runs and which edits to try, in `locate.py`):
1. `source.build` -> `SourceInputs` (generator): matched pairs (equal length, no EOS) from the
   testbed teacher or scan records (`sources/`), training and held-out prompts kept apart;
   normal text for the KL check; the verification's prompt sets.
2. `find_directions` -> `Found`: per layer u = normalise(mean repetitive - mean productive),
   its separation and cosines, what each edit site writes along u; the controls' directions.
3. `search` -> `Searched`: the grid candidates on the most separated layers, or the neuron
   edits of the most separating MLP units, scored without generating (selectivity proxy on
   held-out pairs, KL on normal text), or every layer x site x k ranked to first order
   (`linear_proxy`), its best few at every alpha.
4. `price` -> `Priced` per candidate: its patch, plain-text perplexity and norm-matched controls.
5. `screen` -> `Screened` (generator): the candidates generated on the screening prompts; the
   pick stays within the perplexity budget. A pick that already fails (over budget, losing
   answers, or removing nothing) stops the repair here: nothing is verified that cannot pass.
6. `check` -> `Checked` (generator): the causal check (u removed from what the pick's sites
   write, with hooks: a column edit is only worth keeping if this removes loops), then the pick
   and its controls at every temperature on held-out prompts, paired with the base.
7. `score` -> `Scored`: the exact proxy and KL of the pick and its control, and the decision
   (`decide`: by answers recovered or loops removed, within the KL, weights and perplexity
   budgets).
8. `write` -> `RepairResult`: the patch (or rejected candidate), then the result, built there
   alone, as verify.json and report.md.
Each stage prints its time and peak memory. One model is in memory at a time (`Weights`, opened
by `open_backend`): float32 but in the generator's steps, which run in `generation_dtype` (the
patch records float32 columns); switching drops one model before loading the other.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from loopfix.atomic import check_output_path, write_json_atomic, write_text_atomic
from loopfix.backends.hf import HFBackend
from loopfix.backends.open import open_backend
from loopfix.backends.spec import BackendSpec
from loopfix.patch import build_patch, save_patch
from loopfix.repair.arms import ScreenRow, TemperatureResult
from loopfix.repair.candidates import Candidate, edit_norm
from loopfix.repair.causal import CausalResult, causal_check
from loopfix.repair.config import RepairConfig
from loopfix.repair.decide import judge
from loopfix.repair.locate import (
    Found,
    Searched,
    controls,
    find_directions,
    proxy_batches,
    search,
)
from loopfix.repair.perplexity import general_ability
from loopfix.repair.report import render_report
from loopfix.repair.result import ARMS, RepairResult, ScoredEdit, Timing, Verified
from loopfix.repair.scan_verify import ScanPrompts
from loopfix.repair.scoring import Scorer
from loopfix.repair.sources import RepairSource, source_for
from loopfix.repair.sources.base import SourceInputs
from loopfix.repair.verdict import screening_verdict, verdict
from loopfix.repair.verification import Verifier
from loopfix.stages import StageClock

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from loopfix.patch import Patch

__all__ = ["run_repair"]

# The verified numbers a written patch carries (patch.json "metrics").
PATCH_METRICS = ("accepted", "kl", "rescues", "regressions", "touched_fraction", *ARMS)


class Weights:
    """The one model in memory, opened by `open_backend` from `spec`: `float32()` where edits
    are built, probed and scored, `generator()` (in `spec.dtype`) where the repair generates.
    Asking for the other dtype drops this model before loading that one."""

    def __init__(self, spec: BackendSpec, clock: StageClock) -> None:
        self.spec, self.clock, self.loads = spec, clock, 0
        self.loaded: HFBackend | None = None

    def generator(self) -> HFBackend:
        return self._open(self.spec)

    def float32(self) -> HFBackend:
        return self._open(replace(self.spec, dtype="float32"))

    def _open(self, spec: BackendSpec) -> HFBackend:
        if self.loaded is None or self.loaded.dtype != spec.dtype:
            self.loaded = None
            gc.collect()  # a model's modules may hold cycles: free it before the next loads
            with self.clock.stage(
                f"load {self.loads + 1} ({spec.dtype})" if self.loads else "load"
            ):
                backend = open_backend(spec)
            assert isinstance(backend, HFBackend)  # an "hf" spec
            self.loaded, self.loads = backend, self.loads + 1
        return self.loaded


@dataclass(frozen=True)
class Priced:
    """Step 4, one candidate: its patch (float32 columns, no metrics yet), its perplexity on
    the plain text (None: no text configured), its controls (one per random direction)."""

    candidate: Candidate
    patch: Patch
    perplexity: dict[str, float] | None
    controls: tuple[Candidate, ...]


@dataclass(frozen=True)
class Screened:
    """Step 5: the screening table, its pick (`rows[best]`), why it cannot pass (empty: none)."""

    rows: tuple[ScreenRow, ...]
    best: int
    pick: Priced
    stop: tuple[str, ...]


@dataclass(frozen=True)
class Checked:
    """Step 6: the causal check and the verified arms by temperature."""

    causal: CausalResult | None  # None: a neuron edit (its weight edit is its activation edit)
    by_temperature: dict[str, TemperatureResult]


@dataclass(frozen=True)
class Scored:
    """Step 7: the pick's exact proxy and what was verified of it (decision, control)."""

    candidate: ScoredEdit
    verified: Verified


def run_repair(
    model_spec: str,
    out: Path | str,
    config: RepairConfig | None = None,
    report: Callable[[str], None] = print,
    trust_remote_code: bool = False,
    source: RepairSource | None = None,
) -> RepairResult:
    """Repair `model_spec`'s loops into `out` (patch, verify.json, report.md) by the module's
    steps. `source` builds the branches, normal text and prompt sets; None: the one
    `config.source` names."""
    out = Path(out)
    check_output_path(out, folder=True)
    config = config or RepairConfig()
    source = source or source_for(config)  # a bad choice fails before the model is loaded
    clock = StageClock(report)
    spec = BackendSpec("hf", model_spec, config.gen_batch_size, config.generation_dtype, "cpu")
    weights = Weights(replace(spec, trust_remote_code=trust_remote_code), clock)
    inputs = source.build(weights.generator(), model_spec, out, config, clock)
    config = inputs.config
    with clock.stage("probe+directions"):
        found = find_directions(weights.float32().model, inputs.train, config, inputs.pad_id)
    with clock.stage("search"):
        searched = search(weights.float32().model, inputs, found)
    first = searched.candidates[0].label()
    report(
        f"search ({searched.record.method}): {len(searched.candidates)} to screen, first {first}"
    )
    with clock.stage("perplexity"):
        priced = price(weights.float32(), inputs, found, searched)
    prompts = ScanPrompts(
        weights.generator(), inputs.scan, inputs.prompt_sets, config, out / "verification", report
    )
    verifier = Verifier(prompts, config)
    with clock.stage("screen"):
        screened = screen(verifier, priced)
    if screened.stop and not config.verify_screened_out:
        return write(model_spec, out, clock, inputs, searched, screened, None)
    checked = check(verifier, found, screened, clock)
    del prompts, verifier  # the generator's last users: one model in memory at a time
    with clock.stage("score"):
        scored = score(weights.float32().model, inputs, found, screened, checked)
    return write(model_spec, out, clock, inputs, searched, screened, scored)


def price(
    float32: HFBackend, inputs: SourceInputs, found: Found, searched: Searched
) -> tuple[Priced, ...]:
    """Step 4: what needs the float32 model before generation, for every candidate (the
    screening compares their perplexities, and the pick is not known before it)."""
    model, config = float32.model, inputs.config
    ability = general_ability(model, float32.tokenizer, config)
    priced = []
    for candidate in searched.candidates:
        provenance = {
            "method": inputs.description.method,
            "candidate": candidate.shape.to_json(),
            "separations": [found.directions.separations[layer] for layer in candidate.layers],
            "config": config.model_dump(mode="json"),
        }
        patch = build_patch(
            model, candidate.requests, model_id=float32.source, provenance=provenance
        )
        perplexity = None if ability is None else ability.of(candidate.requests)
        priced.append(
            Priced(candidate, patch, perplexity, controls(model, candidate, found, config))
        )
    return tuple(priced)


def screen(verifier: Verifier, priced: tuple[Priced, ...]) -> Screened:
    """Step 5: every candidate on the screening prompts; the pick and its failures."""
    ratios = [None if p.perplexity is None else p.perplexity["ratio"] for p in priced]
    best, rows = verifier.screen([p.candidate for p in priced], ratios)
    stop = tuple(verifier.screening_failures(rows[best]))
    return Screened(tuple(rows), best, priced[best], stop)


def check(verifier: Verifier, found: Found, screened: Screened, clock: StageClock) -> Checked:
    """Step 6: the causal check of the pick at its own strength (whether removing u from what
    its sites write, with hooks and no weight change, removes loops where the edit is kept),
    then the pick and its controls at every temperature."""
    pick, causal = screened.pick, None
    if pick.candidate.edit == "direction":
        with clock.stage("causal check"):
            causal = causal_check(
                verifier, pick.candidate, found.directions.vectors, found.random[0]
            )
        clock.report(f"causal check: {json.dumps(causal.to_json()['summary'])}")
    with clock.stage("verify"):
        by_temperature = verifier.full(pick.candidate, pick.controls)
    return Checked(causal, by_temperature)


def score(
    model: PreTrainedModel, inputs: SourceInputs, found: Found, screened: Screened, checked: Checked
) -> Scored:
    """Step 7: the exact proxy and KL of the pick and its first control, and the decision."""
    pick, scorer = screened.pick, Scorer(model, *proxy_batches(inputs))
    candidate, control = (
        ScoredEdit(
            edit.shape,
            scorer.score(build_patch(model, edit.requests)),
            edit_norm(model, edit.requests),
        )
        for edit in (pick.candidate, pick.controls[0])
    )
    assert candidate.proxy is not None and control.proxy is not None
    decision = judge(
        checked.by_temperature,
        checked.causal,
        candidate.proxy.kl,
        pick.patch.touched_fraction,
        pick.perplexity,
        inputs.config,
    )
    verified = Verified(decision, control, control.proxy.kl, checked.causal, found.to_json())
    return Scored(candidate, verified)


def write(
    model_spec: str,
    out: Path,
    clock: StageClock,
    inputs: SourceInputs,
    searched: Searched,
    screened: Screened,
    scored: Scored | None,
) -> RepairResult:
    """Step 8: the patch with the verified numbers (OUT, or OUT/rejected_candidate when
    rejected; none when `scored` is None, stopped at screening), then the result, as
    verify.json and report.md."""
    config, pick = inputs.config, screened.pick
    patch = None
    with clock.stage("write"):
        if scored is not None:
            decision = scored.verified.decision
            numbers = decision.to_json()
            folder = out if decision.accepted else out / "rejected_candidate"
            metrics = {key: numbers[key] for key in PATCH_METRICS}
            save_patch(replace(pick.patch, metrics=metrics), folder)
            patch = folder / "patch.json"
    rows = screened.rows
    result = RepairResult(
        model=model_spec,
        verdict=screening_verdict(list(rows), screened.best, list(screened.stop), config)
        if scored is None
        else verdict(pick.candidate.label(), scored.verified.decision, config),
        temperature=config.temperature,
        n=rows[0].compared.arm.n if scored is None else scored.verified.decision.primary.base.n,
        touched_fraction=pick.patch.touched_fraction,
        candidate=ScoredEdit(pick.candidate.shape) if scored is None else scored.candidate,
        source=inputs.description,
        search=searched.record,
        screening=rows,
        config=config.model_dump(mode="json"),
        verified=None if scored is None else scored.verified,
        patch=patch,
        timing=Timing.of(clock),
        folder=out,
    )
    write_json_atomic(result.verify_json, result.to_json())
    write_text_atomic(result.report, render_report(result))
    return result
