"""report.md: the repair's outcome for a person, from the verify.json data."""

from __future__ import annotations

from typing import Any

from loopfix.repair.candidates import row_label

__all__ = ["render_report"]

_ARMS = ("base", "patched", "random_control")


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def _row(temperature: str, arm: str, data: dict[str, Any]) -> str:
    went = ", ".join(f"{k} {v}" for k, v in data["outcomes"].items() if v)
    return (
        f"| {temperature} | {arm} | {_percent(data['loop_rate'])} | "
        f"{_percent(data['accuracy'])} | {_percent(data['cut_rate'])} | "
        f"{data['mean_length']:.1f} | {went} |"
    )


def _branches(branches: dict[str, Any]) -> list[str]:
    """What a records source built its branches from (the testbed's come from its teacher)."""
    if "records" not in branches:
        return [f"Branches: {branches['method']}.", ""]
    train, heldout = branches["train"], branches["heldout"]
    return [
        f"Branches from {branches['records']} (source {branches['source']}: "
        f"{branches['method']}): prompts {branches['prompts']}; training pairs {train['pairs']} of "
        f"{train['looping_samples']} looping samples (dropped {train['dropped']}), held-out "
        f"pairs {heldout['pairs']} of {heldout['looping_samples']} (dropped "
        f"{heldout['dropped']}); KL on {branches['normal']} {branches['normal_source']}.",
        "",
    ]


def _screening(rows: list[dict[str, Any]], chosen: str) -> list[str]:
    """The screened candidates as the pick saw them (`Verifier.screen`)."""
    lines = [
        f"Screening ({rows[0]['n']} prompts, not the verification's): the pick removes the most "
        "loops net within the perplexity budget and without a significant fall in success.",
        "",
        "| candidate | loop rate | loops removed / added | rescues / regressions | perplexity |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        label = row_label(row)
        ratio = row.get("perplexity_ratio")
        lines.append(
            f"| {'**' + label + '**' if label == chosen else label} | "
            f"{_percent(row['loop_rate'])} | {row['loops_removed']} / {row['loops_added']} | "
            f"{row['rescues']} / {row['regressions']} | "
            f"{'n/a' if ratio is None else f'{ratio - 1:+.2%}'} |"
        )
    return [*lines, ""]


def _checks(result: dict[str, Any]) -> list[str]:
    """The checks grouped by route (`decide.py`): budgets apply to both."""
    checks = result["checks"]
    return [
        f"Checks, {route}: "
        + ", ".join(f"{name} {'yes' if checks[name] else 'NO'}" for name in names)
        for route, names in result["routes"].items()
    ]


def _answers(result: dict[str, Any]) -> list[str]:
    lines = ["Answers against the base (paired on the same prompts and sampler seed):", ""]
    for temperature, row in result["answers"].items():
        lines.append(
            f"- T={temperature}: success {_percent(row['base_accuracy'])} -> "
            f"{_percent(row['patched_accuracy'])}; {row['rescues']} recovered, "
            f"{row['regressions']} lost (net {row['net']:+d}, McNemar p {row['mcnemar_p']:.3g}); "
            f"random controls net {', '.join(f'{n:+d}' for n in row['controls_net'])}"
        )
    return [*lines, ""]


def render_report(result: dict[str, Any]) -> str:
    candidate = result["candidate"]
    head = [f"# loopfix repair: {result['model']}", "", f"**{result['verdict']}**", ""]
    if result["stopped_at"] is not None:
        return "\n".join(
            [
                *head,
                *_branches(result["branches"]),
                *_screening(result["screening"], candidate["label"]),
                "Nothing was verified: the screening's best candidate cannot be accepted.",
                "",
            ]
        )
    lines = [
        *head,
        f"Candidate: {candidate['label']} (proxy d_rep {candidate['proxy']['d_rep']:+.3f}, "
        f"d_prod {candidate['proxy']['d_prod']:+.3f} nats/token, KL {result['kl']:.4f}); "
        f"touched {result['touched_fraction']:.4%} of the weights. Control: a norm-matched random "
        f"direction (alpha {result['control']['alpha']:.2f}, KL {result['control_kl']:.4f}).",
        "",
        *_branches(result["branches"]),
        f"| T | arm | loop rate | success | cut rate | mean length | where the "
        f"{result['branches']['unit']} went |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for temperature, block in result["by_temperature"].items():
        lines += [_row(temperature, arm, block[arm]) for arm in _ARMS]
    lines += ["", *_answers(result), *_screening(result["screening"], candidate["label"])]
    lines += ["Paired with the base (same prompts, same sampler seed):", ""]
    for temperature, block in result["by_temperature"].items():
        for arm, paired in block["paired"].items():
            lines.append(
                f"- T={temperature} {arm}: rescues {paired['rescues']}, regressions "
                f"{paired['regressions']} (McNemar p {paired['mcnemar_p']:.3g}); loops removed "
                f"{paired['loops_removed']}, added {paired['loops_added']} (p "
                f"{paired['loop_mcnemar_p']:.3g}); base loops went to "
                f"{paired['base_loops_went_to']}"
            )
    causal = result["causal"]["summary"]
    doses = "; ".join(
        f"strength {strength}: {rates['direction']:.1%} (random direction {rates['random']:.1%})"
        for strength, rates in causal["by_strength"].items()
    )
    lines += [
        "",
        f"Activation-level check (the {result['causal']['site']} outputs of layers "
        f"{result['causal']['layers']} edited along u while generating, "
        f"T={result['causal']['temperature']:g}): "
        f"base loops {causal['base_loop_rate']:.1%}; {doses}.",
        "",
        *_checks(result),
        "",
    ]
    return "\n".join(lines)
