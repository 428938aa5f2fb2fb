"""`loopfix warn`: fit the own-model early warning on a model's own scan records and measure how
many tokens before the text tiers it fires (issue 41, points 3 and 4; docs/states.md).

Samples, by the scan's one loop definition (`scan.summary.is_loop`): a *loop* (cut in a loop),
a *clean* sample (ended by itself, no loop found anywhere in it: "an answer that never loops"),
or *other* (cut without a loop, or a loop the model got out of), which is left out of fitting
and counted apart. Prompts are split before anything is fitted: a prompt whose id hashes into
the held-out share is held out with every sample of it (`part_of`).

On each part: the *false-alarm rate*, the share of clean samples warned anywhere; for each loop,
the step the warning fires and the step the text tier fires (the online watch that `rescue` and
`cut` act on: `guards.watch` with its defaults, fed the output one token at a time), and the
*lead*: text step minus warning step (positive: the warning came first).

The control is the length rule: warn at a fixed step, the one after which at most the same
share of the tune part's clean samples still run (a loop runs to the cap, so length alone warns
early too). The probe is worth its states only where it beats that rule on the held-out part.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from loopfix.atomic import write_json_atomic
from loopfix.guards.watch import WatchParams, new_monitor
from loopfix.leadtime.config import WarningConfig, WarningError
from loopfix.records import Sample
from loopfix.states.warning import (
    WarningProbe,
    choose_threshold,
    default_layer,
    fit_logistic,
    step_labels,
    window_features,
)

__all__ = ["LeadSummary", "SampleWarning", "run_warning"]

Kind = Literal["loop", "clean", "other"]
Part = Literal["tune", "heldout"]
Rule = Literal["probe", "length"]
PERCENTILES = (10, 25, 50, 75, 90)


def part_of(prompt_id: str, heldout_share: float) -> Part:
    digest = int.from_bytes(hashlib.sha256(prompt_id.encode()).digest()[:8], "big")
    return "heldout" if digest / 2**64 < heldout_share else "tune"


def kind_of(sample: Sample) -> Kind:
    from loopfix.scan.summary import is_loop

    if is_loop(sample):
        return "loop"
    if sample.finish_reason == "stop" and not sample.looping:
        return "clean"
    return "other"


def text_step(tokens: Sequence[int]) -> int | None:
    """The step at which the online watch (`rescue`'s and `cut`'s, default settings) finds a
    loop, or None."""
    monitor = new_monitor(WatchParams())
    for step, token in enumerate(tokens):
        verdict = monitor.push(token)
        if verdict is not None and verdict.looping:
            return step
    return None


@dataclass(frozen=True)
class SampleWarning:
    prompt_id: str
    temperature: float
    kind: Kind
    part: Part
    steps: int
    onset: int | None  # the scan verdict's loop onset (loops only)
    text_step: int | None
    warning_step: int | None  # the probe's
    length_step: int | None  # the length rule's
    peak: float  # the probe's highest step probability

    def warned(self, rule: Rule) -> int | None:
        return self.warning_step if rule == "probe" else self.length_step

    def lead(self, rule: Rule) -> int | None:
        warned = self.warned(rule)
        if self.text_step is None or warned is None:
            return None
        return self.text_step - warned


@dataclass(frozen=True)
class LeadSummary:
    """One part's numbers under one warning rule (see the module docstring)."""

    part: Part
    rule: Rule
    clean: int
    false_alarms: int
    loops: int
    warned: int
    text_fired: int  # loops the watch found while generating
    earlier: int  # loops warned strictly before the watch fired
    leads: list[int]  # per loop with both steps, text step minus warning step
    lead_percentiles: dict[str, float]
    others: int
    others_warned: int

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.clean if self.clean else float("nan")


def summarise_part(rows: Sequence[SampleWarning], part: Part, rule: Rule) -> LeadSummary:
    mine = [row for row in rows if row.part == part]
    loops = [row for row in mine if row.kind == "loop"]
    clean = [row for row in mine if row.kind == "clean"]
    others = [row for row in mine if row.kind == "other"]
    leads = [lead for lead in (row.lead(rule) for row in loops) if lead is not None]
    return LeadSummary(
        part,
        rule,
        len(clean),
        sum(row.warned(rule) is not None for row in clean),
        len(loops),
        sum(row.warned(rule) is not None for row in loops),
        sum(row.text_step is not None for row in loops),
        sum(lead > 0 for lead in leads),
        leads,
        {f"p{q}": float(np.percentile(leads, q)) for q in PERCENTILES} if leads else {},
        len(others),
        sum(row.warned(rule) is not None for row in others),
    )


def length_rule(clean_lengths: Sequence[int], false_alarm: float) -> int:
    """The step at which the length rule warns: at most `false_alarm` of the clean samples
    (by their lengths) run past it."""
    ordered = sorted(clean_lengths, reverse=True)
    allowed = int(np.floor(false_alarm * len(ordered)))
    return ordered[allowed] if allowed < len(ordered) else 0


def run_warning(
    config: WarningConfig, out: Path, report: Callable[[str], None] = print
) -> tuple[WarningProbe, list[LeadSummary]]:
    """Fit on the tune part, measure both parts; writes OUT/warning_probe.json (the probe and
    its provenance) and OUT/warning.json (the summaries and every sample's row)."""
    from loopfix.models import load_model
    from loopfix.progress import line_progress
    from loopfix.repair.sources.scan_records import read_records
    from loopfix.states.steps import step_signals

    model, tokenizer = load_model(config.model)
    extra = [Path(path) for path in config.extra]
    records = read_records(Path(config.records), None, config.model, tokenizer, extra)
    layers = int(model.config.get_text_config().num_hidden_layers)
    layer = default_layer(layers) if config.layer is None else config.layer
    if layer > layers:
        raise WarningError(f"--layer: the model has layers 0..{layers}, not {layer}")
    states = config.features == "states"
    progress = line_progress("hidden states", report)
    features, labels, meta = [], [], []
    for sample in records.samples:
        if sample.tokens:
            signals = step_signals(model, records.prompts[sample.prompt_id], sample.tokens, layer)
            kind = kind_of(sample)
            onset = sample.loop.onset if kind == "loop" and sample.loop is not None else None
            features.append(window_features(signals, config.window, states))
            labels.append(step_labels(len(sample.tokens), onset))
            meta.append((sample, kind, onset, part_of(sample.prompt_id, config.heldout_share)))
        progress(1, len(records.samples))
    fitting = [i for i, (_, kind, _, part) in enumerate(meta) if part == "tune" and kind != "other"]
    if not any(meta[i][1] == "loop" for i in fitting) or not any(
        meta[i][1] == "clean" for i in fitting
    ):
        raise WarningError(
            f"{config.records}: the tune part needs looping and clean samples (it has "
            f"{sum(meta[i][1] == 'loop' for i in fitting)} and "
            f"{sum(meta[i][1] == 'clean' for i in fitting)}); scan more prompts"
        )
    tune_x = np.concatenate([features[i] for i in fitting])
    tune_y = np.concatenate([labels[i] for i in fitting])
    mean, scale = tune_x.mean(axis=0), tune_x.std(axis=0)
    scale[scale == 0] = 1.0
    weights, bias = fit_logistic((tune_x - mean) / scale, tune_y, config.strength)
    unfitted = WarningProbe(
        config.model, layer, config.window, states, mean, scale, weights, bias, 1.0, {}
    )
    probabilities = [unfitted.probabilities(x) for x in features]
    tune_clean = [i for i in fitting if meta[i][1] == "clean"]
    threshold = choose_threshold(
        [float(probabilities[i].max()) for i in tune_clean], config.false_alarm
    )
    length_step = length_rule([len(features[i]) for i in tune_clean], config.false_alarm)
    provenance = {
        "records": str(records.path),
        "suite": records.config.suite,
        "split": f"prompts whose sha256(id) falls in the first {config.heldout_share:.3g} "
        "held out; fitted on the rest",
        "features": (f"layer {layer} mean state, " if states else "")
        + f"mean top-1, flywheel, entropy streak, mean entropy over the last {config.window} "
        "steps",
        "labels": "loops (scan.summary.is_loop): steps from the onset on; clean samples: none",
        "regularisation": f"L2, C = {config.strength:g}, classes weighted equally",
        "threshold_rule": f"at most {config.false_alarm:g} of the tune part's clean samples warned",
        "tune_steps": int(len(tune_y)),
    }
    fitted = (mean, scale, weights, bias, threshold, provenance)
    probe = WarningProbe(config.model, layer, config.window, states, *fitted)
    rows = [
        SampleWarning(
            sample.prompt_id,
            float(sample.settings.get("temperature", 0.0)),
            kind,
            part,
            len(sample.tokens),
            onset,
            text_step(sample.tokens),
            probe.first_warning(p),
            length_step if len(sample.tokens) > length_step else None,
            float(p.max()),
        )
        for (sample, kind, onset, part), p in zip(meta, probabilities, strict=True)
    ]
    summaries = [
        summarise_part(rows, part, rule)
        for part in ("tune", "heldout")
        for rule in ("probe", "length")
    ]
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "warning_probe.json", probe.to_json())
    write_json_atomic(
        out / "warning.json",
        {
            "config": config.model_dump(),
            "layer": layer,
            "threshold": threshold,
            "length_step": length_step,
            "parts": [asdict(summary) for summary in summaries],
            "samples": [asdict(row) for row in rows],
        },
    )
    return probe, summaries
