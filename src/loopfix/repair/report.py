"""report.md: the repair's outcome for a person, from its `RepairResult`."""

from __future__ import annotations

from loopfix.repair.arms import ArmResult, ScreenRow
from loopfix.repair.causal import CausalResult
from loopfix.repair.decide import Decision
from loopfix.repair.result import RepairResult, Verified
from loopfix.repair.sources.description import Branches, RecordsBranches

__all__ = ["render_report"]


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _row(temperature: str, arm: str, data: ArmResult) -> str:
    went = ", ".join(f"{k} {v}" for k, v in data.outcomes.items() if v)
    return (
        f"| {temperature} | {arm} | {_percent(data.loop_rate)} | "
        f"{_percent(data.accuracy)} | {_percent(data.cut_rate)} | "
        f"{data.mean_length:.1f} | {went} |"
    )


def _branches(branches: Branches) -> list[str]:
    """What a records source built its branches from (the testbed's come from its teacher)."""
    if not isinstance(branches, RecordsBranches):
        return [f"Branches: {branches.method}.", ""]
    train, heldout = branches.train, branches.heldout
    return [
        f"Branches from {branches.records} (source {branches.source}: "
        f"{branches.method}): prompts {branches.prompts}; training pairs {train.pairs} of "
        f"{train.looping_samples} looping samples (dropped {train.dropped}), held-out "
        f"pairs {heldout.pairs} of {heldout.looping_samples} (dropped "
        f"{heldout.dropped}); KL on {branches.normal} {branches.normal_source}.",
        "",
    ]


def _screening(rows: tuple[ScreenRow, ...], chosen: str) -> list[str]:
    """The screened candidates as the pick saw them (`Verifier.screen`)."""
    lines = [
        f"Screening ({rows[0].compared.arm.n} prompts, not the verification's): the pick removes "
        "the most loops net within the perplexity budget and without a significant fall in "
        "success.",
        "",
        "| candidate | loop rate | loops removed / added | rescues / regressions | perplexity |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        label, ratio, paired = row.shape.label(), row.perplexity_ratio, row.compared.paired
        lines.append(
            f"| {'**' + label + '**' if label == chosen else label} | "
            f"{_percent(row.compared.arm.loop_rate)} | {paired.loops_removed} / "
            f"{paired.loops_added} | {paired.rescues} / {paired.regressions} | "
            f"{'n/a' if ratio is None else f'{ratio - 1:+.2%}'} |"
        )
    return [*lines, ""]


def _checks(decision: Decision) -> list[str]:
    """The checks grouped by route (`decide.py`): budgets apply to both."""
    checks = decision.checks
    return [
        f"Checks, {route}: "
        + ", ".join(f"{name} {'yes' if checks[name] else 'NO'}" for name in names)
        for route, names in decision.routes.items()
    ]


def _answers(decision: Decision) -> list[str]:
    lines = ["Answers against the base (paired on the same prompts and sampler seed):", ""]
    for temperature, row in decision.answers.items():
        paired = row.paired
        lines.append(
            f"- T={temperature}: success {_percent(row.base_accuracy)} -> "
            f"{_percent(row.patched_accuracy)}; {paired.rescues} recovered, "
            f"{paired.regressions} lost (net {paired.net:+d}, McNemar p {paired.mcnemar_p:.3g}); "
            f"random controls net {', '.join(f'{n:+d}' for n in row.controls_net)}"
        )
    return [*lines, ""]


def _verified(result: RepairResult, verified: Verified) -> list[str]:
    candidate, decision, causal = result.candidate, verified.decision, verified.causal
    label = candidate.shape.label()
    assert candidate.proxy is not None  # a verified candidate was scored
    lines = [
        f"Candidate: {label} (proxy d_rep {candidate.proxy.d_rep:+.3f}, "
        f"d_prod {candidate.proxy.d_prod:+.3f} nats/token, KL {decision.kl:.4f}); "
        f"touched {decision.touched_fraction:.4%} of the weights. Control: "
        + (
            f"as many random neurons of the same layer (KL {verified.control_kl:.4f})."
            if candidate.shape.edit == "neurons"
            else f"a norm-matched random direction (alpha {verified.control.shape.alpha:.2f}, "
            f"KL {verified.control_kl:.4f})."
        ),
        "",
        *_branches(result.source),
        f"| T | arm | loop rate | success | cut rate | mean length | where the "
        f"{result.source.unit} went |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for temperature, block in decision.by_temperature.items():
        lines += [_row(temperature, arm, data) for arm, data in block.arms.items()]
    lines += ["", *_answers(decision), *_screening(result.screening, label)]
    lines += ["Paired with the base (same prompts, same sampler seed):", ""]
    for temperature, block in decision.by_temperature.items():
        for arm, paired in (
            ("patched", block.paired),
            ("random_control", block.paired_controls[0]),
        ):
            lines.append(
                f"- T={temperature} {arm}: rescues {paired.rescues}, regressions "
                f"{paired.regressions} (McNemar p {paired.mcnemar_p:.3g}); loops removed "
                f"{paired.loops_removed}, added {paired.loops_added} (p "
                f"{paired.loop_mcnemar_p:.3g}); base loops went to "
                f"{paired.base_loops_went_to}"
            )
    return [*lines, "", *_causal(causal), *_checks(decision), ""]


def _causal(causal: CausalResult | None) -> list[str]:
    if causal is None:
        return [
            "No activation-level check: a neuron edit's weight edit is its activation edit.",
            "",
        ]
    doses = "; ".join(
        f"strength {dose.strength:g}: {dose.direction.arm.loops:.1%} (random direction "
        f"{dose.random.arm.loops:.1%})"
        for dose in causal.doses
    )
    return [
        f"Activation-level check (the {causal.site} outputs of layers {list(causal.layers)} "
        f"edited along u while generating, T={causal.temperature:g}): "
        f"base loops {causal.base.loops:.1%}; {doses}.",
        "",
    ]


def render_report(result: RepairResult) -> str:
    head = [f"# loopfix repair: {result.model}", "", f"**{result.verdict}**", ""]
    if result.verified is None:
        return "\n".join(
            [
                *head,
                *_branches(result.source),
                *_screening(result.screening, result.candidate.shape.label()),
                "Nothing was verified: the screening's best candidate cannot be accepted.",
                "",
            ]
        )
    return "\n".join([*head, *_verified(result, result.verified)])
