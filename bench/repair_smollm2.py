"""The repair experiment on SmolLM2-135M-Instruct (`loopfix:smollm2`), stage by stage.

    PYTHONPATH=src .venv/bin/python bench/repair_smollm2.py scan [--out runs/repair-smollm2]
    ... search|screen|tune|verify --source scan|rescue|outcome

scan: the base scans. search: pairs, directions, the first-order proxy over every layer, site
and k. screen: the proxy's ranking and a strength grid generated on the training prompts.
tune: optuna over structure and strength, scored by the same generation (a comparison with the
grid; it picks nothing). verify: the best screened candidate, 3 random controls, KL and
perplexity on the held-out prompts, the candidate written as a patch.

Every stage writes under OUT and resumes: a scan folder continues where it stopped (run_scan),
a stage's JSON result is reused when present. Progress goes to stdout.

The data split is fixed before any tuning: `arith` prompts from seed 1401 (training: directions,
proxy, screening) and seed 1402 (held out: verification only), 200 each, no prompt shared.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
from scipy.stats import spearmanr

from loopfix.atomic import write_json_atomic
from loopfix.backends.hf import HFBackend
from loopfix.models import load_model
from loopfix.patch import EditSite, build_patch, save_patch
from loopfix.records import read_samples
from loopfix.repair.batches import branch_batches, walk_batches
from loopfix.repair.candidates import Candidate, candidate, norm_matched_control
from loopfix.repair.config import PLAIN_TEXT, RepairConfig
from loopfix.repair.decide import acceptance_checks
from loopfix.repair.directions import random_directions
from loopfix.repair.linear_proxy import LinearProxy
from loopfix.repair.perplexity import general_ability
from loopfix.repair.pipeline import find_directions
from loopfix.repair.scan_verify import ScanOutcomes, ScanPrompts
from loopfix.repair.scoring import text_kl
from loopfix.repair.sources import BranchPair
from loopfix.repair.sources.outcome import OutcomeSource
from loopfix.repair.sources.records import PairRequest, RecordsSource, normal_texts, read_records
from loopfix.repair.sources.rescue import RescueSource
from loopfix.repair.sources.scan import ScanSource
from loopfix.repair.verification import Verifier
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.summary import is_loop, setting_summary
from loopfix.stages import StageClock, peak_rss_mib
from loopfix.suites import load_suite
from loopfix.suites.render import prompt_ids

MODEL = "loopfix:smollm2"
SUITE = "arith"
TRAIN_SEED, HELDOUT_SEED = 1401, 1402
PROMPTS = 200
CAP = 256  # docs/real-model.md's cap
# Generation dtype, shared by every arm (`--dtype`): bfloat16 where the CPU has it natively
# (2.2x the float32 engine's tokens/s there, docs/real-model.md), else float32.
DTYPE = RepairConfig(gen_dtype="auto").generation_dtype
GEN_BATCH = 40
TEMPERATURES = (0.0, 0.6)


def _progress(label: str):
    start, done = time.monotonic(), [0]

    def report(advance: int, total: int | None) -> None:
        if total is not None and advance == 0:
            report.total = total  # type: ignore[attr-defined]
        done[0] += advance
        total_ = getattr(report, "total", None)
        print(
            f"  {label}: {done[0]}/{total_} samples, {time.monotonic() - start:.0f} s",
            flush=True,
        )

    return report


def base_folder(out: Path, seed: int, temperature: float | tuple[float, ...]) -> Path:
    temperatures = temperature if isinstance(temperature, tuple) else (temperature,)
    return out / "base" / f"seed{seed}-T{'-'.join(f'{t:g}' for t in temperatures)}"


def arm_scan(
    backend: HFBackend,
    suite: str,
    seed: int,
    temperature: float | tuple[float, ...],
    folder: Path,
    n: int | None,
    cap: int = CAP,
) -> list[Any]:
    """One arm: a scan of `suite` with the model as it is now (patched or not), resumable."""
    temperatures = list(temperature) if isinstance(temperature, tuple) else [temperature]
    config = ScanConfig(
        model=MODEL,
        suite=suite,
        n=n,
        temperatures=temperatures,
        seed=seed,
        max_new_tokens=cap,
        dtype=DTYPE,
        batch_size=GEN_BATCH,
        out=folder,
    )
    start = time.monotonic()
    run_scan(config, backend, _progress(folder.name))
    samples = list(read_samples(folder / "records.jsonl"))
    stats = setting_summary(samples)
    print(
        f"{folder.name}: {time.monotonic() - start:.0f} s, peak RSS {peak_rss_mib():.0f} MiB, "
        f"loops {stats['loop_rate']:.3f} cut {stats['cut_rate']:.3f} "
        f"accuracy {stats['accuracy']:.3f}",
        flush=True,
    )
    return samples


def base_scan(
    backend: HFBackend, seed: int, temperature: float | tuple[float, ...], out: Path
) -> list[Any]:
    return arm_scan(backend, SUITE, seed, temperature, base_folder(out, seed, temperature), PROMPTS)


# The outcome source pairs a prompt's looping run with a converging run of the same prompt, so
# its training records hold every training prompt at two temperatures (greedy loops, T=0.6 runs
# that end); screening reads the greedy half of whichever training scan the source used.
OUTCOME_TEMPERATURES = (0.0, 0.6)
BASE_SCANS: dict[str, tuple[int, float | tuple[float, ...]]] = {
    "heldout-T0": (HELDOUT_SEED, 0.0),
    "train-T0": (TRAIN_SEED, 0.0),
    "heldout-T0.6": (HELDOUT_SEED, 0.6),
    "train-T0+0.6": (TRAIN_SEED, OUTCOME_TEMPERATURES),
}


def training_samples(out: Path, source: str) -> Path:
    """The training scan a source's pairs and screening prompts come from."""
    if source == "outcome":
        return base_folder(out, TRAIN_SEED, OUTCOME_TEMPERATURES) / "records.jsonl"
    return base_folder(out, TRAIN_SEED, 0.0) / "records.jsonl"


def stage_scan(out: Path, which: list[str]) -> None:
    """The base model's scans (all of BASE_SCANS unless named); two can run side by side."""
    model, tokenizer = load_model(MODEL, device="cpu", dtype=DTYPE)
    backend = HFBackend(model, tokenizer, batch_size=GEN_BATCH)
    for name in which or list(BASE_SCANS):
        base_scan(backend, *BASE_SCANS[name], out)


# The search (float32: log-probs and KL are differences of small numbers).
SITES = ("down_proj", "attn_out")
KS = (8, 32, 64)
ALPHAS = (1.0, 2.0, 4.0)
PROBE_BATCH = 8
KL_TEXTS = 12
SCREEN_TOP, SCREEN_SPREAD = 4, 4  # generated: the best by the linear proxy and a spread
SCREEN_ALPHA = 2.0  # reverses the component along u (the testbed's accepted strength)
# Strength is chosen by generation on the screening prompts: to first order the proxy is
# linear in alpha and the KL has no first-order term, so neither can choose it.
STRENGTH_TOP = 2  # the proxy's best (site, layer, k) also screened at STRENGTH_ALPHAS
STRENGTH_ALPHAS = (1.0, 4.0, 6.0)
PAIR_ALPHAS = (2.0, 4.0)  # the two-layer edit's strengths
SCREEN_NON_LOOPING = 12  # screening prompts that did not loop in the base (loops added)
REPAIR = RepairConfig(
    suite=SUITE,
    positions="mode",
    batch_size=PROBE_BATCH,
    sites=SITES,
    ks=KS,
    alphas=ALPHAS,
    max_touched_fraction=0.001,
)


SOURCES: dict[str, type[RecordsSource]] = {
    "scan": ScanSource,
    "rescue": RescueSource,
    "outcome": OutcomeSource,
}


def tagged(out: Path, name: str, source: str) -> Path:
    """A source's own folder for `name` ("search", "screen", "arms"); the scan source keeps the
    plain names its results were first written under."""
    return out / (name if source == "scan" else f"{name}-{source}")


def training_roles(prompt_ids: list[str]) -> dict[str, list[str]]:
    """Training prompts by a hash of their id: half for the directions, half for selection
    (the proxy's held-out pairs, the KL text and the screening generations)."""
    order = sorted(prompt_ids, key=lambda i: hashlib.sha256(f"split:{i}".encode()).digest())
    half = len(order) // 2
    return {"directions": order[:half], "selection": order[half:]}


def _spread(rows: list[dict[str, Any]], top: int, spread: int) -> list[dict[str, Any]]:
    """The first `top` rows and `spread` more evenly spaced over the rest (mid and low ranks)."""
    rest = rows[top:]
    step = max(1, len(rest) // spread) if rest else 1
    picked = rest[step - 1 :: step][:spread] if spread else []
    return rows[:top] + picked


def _pairs(
    source: RecordsSource,
    model: Any,
    tokenizer: Any,
    records: Any,
    prompts: list[str],
    seed: int,
    cache: Path,
) -> tuple[list[BranchPair], dict[str, Any]]:
    """Matched pairs of these prompts' loops, kept in `cache` (continuing loops is slow)."""
    if cache.exists():
        stored = json.loads(cache.read_text())
        return [BranchPair(**pair) for pair in stored["pairs"]], stored["counts"]
    config = REPAIR.model_copy(update={"gen_batch_size": GEN_BATCH})
    request = PairRequest(records, prompts, REPAIR.repeats, 300, seed)
    pairs, counts = source.pairs(model, tokenizer, request, config)
    write_json_atomic(cache, {"pairs": [vars(p) for p in pairs], "counts": counts})
    return pairs, counts


def stage_search(out: Path, source_name: str) -> None:
    source = SOURCES[source_name]()
    folder = tagged(out, "search", source_name)
    folder.mkdir(parents=True, exist_ok=True)
    clock = StageClock()
    with clock.stage("load"):
        model, fast, tokenizer = _models()
    records = read_records(training_samples(out, source_name), SUITE, MODEL, tokenizer)
    roles = training_roles(list(records.items))
    with clock.stage("branches"):
        # Resampled in the generation dtype (the branches are tokens; probing is float32).
        # Three copies in both sets: SmolLM2's loop periods reach 125 tokens.
        (train, train_counts), (heldout, heldout_counts) = (
            _pairs(
                source, fast, tokenizer, records, roles[role], seed, folder / f"pairs-{role}.json"
            )
            for role, seed in (("directions", 31337), ("selection", 31338))
        )
        normal = normal_texts(records, roles["selection"], KL_TEXTS)
    del fast
    print(f"pairs: directions {train_counts}, selection {heldout_counts}", flush=True)
    pad = int(tokenizer.pad_token_id or 0)
    cached = folder / "directions.pt"
    if cached.exists():  # the probe is the slowest forward work here: computed once
        vectors = torch.load(cached)
    else:
        with clock.stage("directions"):
            directions, _ = find_directions(model, train, REPAIR, pad)
        vectors = directions.vectors
        torch.save(vectors, cached)
    rep = branch_batches(heldout, "repetitive", "mode", PROBE_BATCH, pad)
    prod = branch_batches(heldout, "productive", "mode", PROBE_BATCH, pad)
    sites = [EditSite(layer, kind) for layer in range(len(vectors)) for kind in SITES]
    with clock.stage("linear proxy"):
        linear = LinearProxy.measure(model, rep, prod, vectors, sites)
    rows = []
    for site in sites:
        for k in KS:
            d_rep, d_prod = linear.score(site, k, 1.0)
            rows.append(
                {
                    "site": site.kind,
                    "layer": site.layer,
                    "k": k,
                    "lin_d_rep": d_rep,
                    "lin_d_prod": d_prod,
                    "lin_selectivity": d_prod - d_rep,
                }
            )
    rows.sort(key=lambda r: -r["lin_selectivity"])
    write_json_atomic(
        folder / "search.json",
        {
            "split": {role: ids for role, ids in roles.items()},
            "pairs": {"directions": train_counts, "selection": heldout_counts},
            "normal_texts": len(normal),
            "cosines": (vectors @ vectors.T).tolist(),
            "linear": rows,
            "timing": clock.to_dict(),
        },
    )


SCREEN_CAP = 160  # screening compares arms on one cap; a shorter one costs fewer tokens


class Arms:
    """The `PromptSets` of this experiment, resumable: every arm is a scan in its own folder
    (the base model's held-out scans are the `scan` stage's). "causal" = the screening prompts
    (training prompts), "verify" = the 200 held-out prompts."""

    def __init__(
        self, backend: HFBackend, out: Path, only: set[str] | None = None, source: str = "scan"
    ) -> None:
        # only: read the arms' records as they stand, restricted to these prompt ids (a
        # comparison of unfinished arms on the prompts every arm has finished). source: whose
        # candidates these are (their arms are kept apart; the base arm is shared).
        self.backend, self.out, self.only, self.source = backend, out, only, source

    def generate(self, prompts: str, temperature: float, label: str) -> ScanOutcomes:
        slug = "".join(c if c.isalnum() or c in ".-" else "_" for c in label)
        arms = self.out / "arms" if label == "base" else tagged(self.out, "arms", self.source)
        folder = arms / prompts / f"{slug}-T{temperature:g}"
        if prompts == "verify":
            if label == "base":
                folder = base_folder(self.out, HELDOUT_SEED, temperature)
            if self.only is not None:
                samples = [
                    s for s in read_samples(folder / "records.jsonl") if s.prompt_id in self.only
                ]
                return ScanOutcomes(temperature, tuple(samples), folder)
            samples = arm_scan(self.backend, SUITE, HELDOUT_SEED, temperature, folder, PROMPTS)
        else:
            suite = str(self.out / "screen" / "prompts.jsonl")
            samples = arm_scan(
                self.backend, suite, TRAIN_SEED, temperature, folder, None, SCREEN_CAP
            )
        return ScanOutcomes(temperature, tuple(samples), folder)

    def compare(self, base: ScanOutcomes, other: ScanOutcomes) -> dict[str, Any]:
        return ScanPrompts.compare(base, other)


def _models() -> tuple[Any, Any, Any]:
    """float32 (columns, KL, perplexity) and the generation dtype, one tokenizer."""
    exact, tokenizer = load_model(MODEL, device="cpu")
    fast, _ = load_model(MODEL, device="cpu", dtype=DTYPE)
    return exact, fast, tokenizer


def _candidate(model: Any, directions: torch.Tensor, row: dict[str, Any]) -> Candidate:
    layers = row.get("layers", [row["layer"]])
    return candidate(model, directions, row["site"], layers, row["k"], row["alpha"])


def screening_rows(linear: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What screening generates. "rank": the best (site, layer, k) by first-order selectivity
    and a spread over the rest, at SCREEN_ALPHA (the proxy's rank correlation is read on these).
    "strength": the proxy's best at the other alphas of the strength grid. "two layers": its
    two best layers of the best site and k edited together (the source case's shape)."""
    ranked = [
        {**row, "alpha": SCREEN_ALPHA, "design": "rank"}
        for row in _spread(linear, SCREEN_TOP, SCREEN_SPREAD)
    ]
    strength = [
        {**row, "alpha": alpha, "design": "strength"}
        for row in linear[:STRENGTH_TOP]
        for alpha in STRENGTH_ALPHAS
    ]
    top = linear[0]
    second = next(
        row
        for row in linear[1:]
        if (row["site"], row["k"]) == (top["site"], top["k"]) and row["layer"] != top["layer"]
    )
    layers = sorted([top["layer"], second["layer"]])
    pair = [{**top, "layers": layers, "alpha": a, "design": "two layers"} for a in PAIR_ALPHAS]
    return ranked + strength + pair


def _screening(out: Path, source: str) -> tuple[Any, Verifier[ScanOutcomes]]:
    """The float32 model (edits are built on it) and a verifier on the screening prompts: the
    looping selection prompts of the training scan's greedy half and SCREEN_NON_LOOPING more."""
    exact_model, model, tokenizer = _models()
    base = [
        s for s in read_samples(training_samples(out, source)) if s.settings["temperature"] == 0.0
    ]
    selection = set(training_roles(sorted({s.prompt_id for s in base}))["selection"])
    looping = [s.prompt_id for s in base if s.prompt_id in selection and is_loop(s)]
    calm = [s.prompt_id for s in base if s.prompt_id in selection and not is_loop(s)]
    wanted = set(looping + calm[:SCREEN_NON_LOOPING])
    (out / "screen").mkdir(parents=True, exist_ok=True)
    items = [i for i in load_suite(SUITE, PROMPTS, TRAIN_SEED) if i.id in wanted]
    suite = out / "screen" / "prompts.jsonl"
    if not suite.exists():
        suite.write_text("".join(json.dumps(i.to_dict()) + "\n" for i in items))
    config = REPAIR.model_copy(update={"temperature": 0.0, "temperatures": (0.0,)})
    arms = Arms(HFBackend(model, tokenizer, batch_size=GEN_BATCH), out, source=source)
    return exact_model, Verifier(model, arms, config)


def _search_result(out: Path, source: str) -> tuple[dict[str, Any], torch.Tensor]:
    folder = tagged(out, "search", source)
    return json.loads((folder / "search.json").read_text()), torch.load(folder / "directions.pt")


def _screened(verifier: Verifier[ScanOutcomes], candidate: Candidate) -> dict[str, Any]:
    """`Verifier.screen_row` with the net loop reduction as a share of the base's loops."""
    row = verifier.screen_row(candidate)
    base_loops = sum(is_loop(s) for s in verifier.base("causal", 0.0).samples)
    net = row["loops_removed"] - row["loops_added"]
    return {**row, "measured_reduction": net / base_loops if base_loops else 0.0}


def stage_screen(out: Path, part: tuple[int, int] | None, source: str) -> None:
    exact_model, verifier = _screening(out, source)
    if part == (0, 0):  # the base arm alone: it needs no search result
        verifier.base("causal", 0.0)
        return
    search, directions = _search_result(out, source)
    rows = screening_rows(search["linear"])
    candidates = [_candidate(exact_model, directions, row) for row in rows]
    if part is not None:  # generate only this process's share of the arms (side by side)
        index, parts = part
        jobs: list[Candidate | None] = [None, *candidates]  # None: the base arm
        for candidate in jobs[index::parts]:
            if candidate is None:
                verifier.base("causal", 0.0)
            else:
                verifier.edited(candidate, 0.0, "causal")
        return
    clock = StageClock()
    with clock.stage("screen"):
        screened = [
            {**_screened(verifier, c), "proxy": row}
            for row, c in zip(rows, candidates, strict=True)
        ]
    base_loops = sum(is_loop(s) for s in verifier.base("causal", 0.0).samples)
    ranked = [r for r in screened if r["proxy"]["design"] == "rank"]
    measured = [r["measured_reduction"] for r in ranked]
    correlations = {
        name: _spearman([key(r["proxy"]) for r in ranked], measured)
        for name, key in {
            "linear_selectivity": lambda p: p["lin_selectivity"],
            "linear_minus_d_rep": lambda p: -p["lin_d_rep"],
        }.items()
    }
    print(f"Spearman (proxy vs measured loop reduction): {correlations}", flush=True)
    write_json_atomic(
        tagged(out, "screen", source) / "screen.json",
        {
            "prompts": len(verifier.base("causal", 0.0).samples),
            "base_loops": base_loops,
            "cap": SCREEN_CAP,
            "rows": screened,
            "spearman": correlations,
            "timing": clock.to_dict(),
        },
    )


# The strength search by generation (`tune`): optuna's TPE, seeded, over the proxy's best
# structures and a continuous alpha, each trial a screening arm; its objective is the net
# number of loops removed on the screening prompts (the quantity the verification tests).
TUNE_TRIALS = 10
TUNE_STARTUP = 4  # random trials before TPE models the rest
TUNE_STRUCTURES = 6
TUNE_ALPHAS = (1.0, 8.0)
TUNE_SEED = 0


def stage_tune(out: Path, source: str) -> None:
    import optuna

    exact_model, verifier = _screening(out, source)
    search, directions = _search_result(out, source)
    structures = search["linear"][:TUNE_STRUCTURES]
    rows: list[dict[str, Any]] = []

    def objective(trial: optuna.Trial) -> int:
        structure = structures[trial.suggest_int("structure", 0, len(structures) - 1)]
        # Two decimals: the arm's folder is named by alpha, so a rerun finds its trials.
        alpha = round(trial.suggest_float("alpha", *TUNE_ALPHAS), 2)
        proxy = {**structure, "alpha": alpha, "design": "optuna"}
        row = {**_screened(verifier, _candidate(exact_model, directions, proxy)), "proxy": proxy}
        rows.append(row)
        print(
            f"trial {trial.number}: {row['site']} L{row['layers']} k{row['k']} a{alpha}: "
            f"net {row['loops_removed'] - row['loops_added']}",
            flush=True,
        )
        return int(row["loops_removed"] - row["loops_added"])

    sampler = optuna.samplers.TPESampler(seed=TUNE_SEED, n_startup_trials=TUNE_STARTUP)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    clock = StageClock()
    with clock.stage("tune"):
        study.optimize(objective, n_trials=TUNE_TRIALS)
    write_json_atomic(
        tagged(out, "tune", source) / "tune.json",
        {"trials": TUNE_TRIALS, "alphas": TUNE_ALPHAS, "rows": rows, "timing": clock.to_dict()},
    )


VERIFY = REPAIR.model_copy(
    update={"temperature": 0.0, "perplexity_text": PLAIN_TEXT, "control_seed": 77}
)


def _edit_checks(
    out: Path,
    source: str,
    model: Any,
    tokenizer: Any,
    chosen: Candidate,
    controls: list[Candidate],
    config: RepairConfig,
) -> tuple[dict[str, float], dict[str, Any]]:
    """KL on held-out normal text (non-looping base answers) and perplexity on the plain text,
    float32, for the candidate and every control; kept in verify[-SOURCE]/edit-checks.json."""
    cache = tagged(out, "verify", source) / "edit-checks.json"
    if cache.exists():
        stored = json.loads(cache.read_text())
        return stored["kl"], stored["perplexity"]
    heldout = list(read_samples(base_folder(out, HELDOUT_SEED, 0.0) / "records.jsonl"))
    prompts = {i.id: i for i in load_suite(SUITE, PROMPTS, HELDOUT_SEED)}
    normal = [
        (ids + list(s.tokens), len(ids))
        for s in heldout
        if not is_loop(s) and s.tokens
        for ids in [prompt_ids(prompts[s.prompt_id], tokenizer, None)]
    ][:KL_TEXTS]
    batches = walk_batches(
        normal, PROBE_BATCH, int(tokenizer.pad_token_id or 0), REPAIR.kl_positions
    )
    seeds = range(config.control_seed, config.control_seed + len(controls))
    edits = {"patched": chosen, **{f"control_{s}": c for s, c in zip(seeds, controls, strict=True)}}
    kl = {
        name: text_kl(model, batches, build_patch(model, c.requests)) for name, c in edits.items()
    }
    ability = general_ability(model, tokenizer, config)
    perplexity = {
        name: None if ability is None else ability.of(c.requests) for name, c in edits.items()
    }
    write_json_atomic(cache, {"kl": kl, "perplexity": perplexity, "normal_texts": len(normal)})
    return kl, perplexity


def _finished_everywhere(out: Path, temperatures: list[float], source: str) -> set[str]:
    folders = [base_folder(out, HELDOUT_SEED, t) for t in temperatures]
    arms = tagged(out, "arms", source) / "verify"
    folders += [f for t in temperatures for f in arms.glob(f"*-T{t:g}")]
    finished = [{s.prompt_id for s in read_samples(f / "records.jsonl")} for f in folders]
    return set.intersection(*finished)


def stage_verify(
    out: Path, temperatures: list[float], part: tuple[int, int] | None, partial: bool, source: str
) -> None:
    """The best screened candidate, its norm-matched random controls (VERIFY.control_seeds
    seeds) and the base on the 200 held-out prompts; KL, perplexity; the acceptance checks."""
    directions = torch.load(tagged(out, "search", source) / "directions.pt")
    # The screening's design picks the candidate; `tune` (optuna on the same prompts) is the
    # comparison of search methods, not a second chance for the held-out prompts.
    screened = json.loads((tagged(out, "screen", source) / "screen.json").read_text())["rows"]
    best = max(
        screened,
        key=lambda r: (r["rescues"] >= r["regressions"], r["loops_removed"] - r["loops_added"]),
    )
    exact_model, model, tokenizer = _models()
    chosen = _candidate(exact_model, directions, best["proxy"])
    layers, width = directions.shape
    seeds = range(VERIFY.control_seed, VERIFY.control_seed + VERIFY.control_seeds)
    controls = [
        norm_matched_control(exact_model, chosen, random_directions(layers, width, seed))
        for seed in seeds
    ]
    config = VERIFY.model_copy(update={"temperatures": tuple(temperatures)})
    only = _finished_everywhere(out, temperatures, source) if partial else None
    arms = Arms(HFBackend(model, tokenizer, batch_size=GEN_BATCH), out, only, source)
    if part == (0, 0):  # only the KL and perplexity of the edits (side by side with the arms)
        _edit_checks(out, source, exact_model, tokenizer, chosen, controls, config)
        return
    if part is not None:  # generate only this process's share of the arms (side by side)
        index, parts = part
        verifier = Verifier(model, arms, config)
        jobs = [(c, t) for t in temperatures for c in [chosen, *controls]]
        for candidate, temperature in jobs[index::parts]:
            verifier.edited(candidate, temperature)
        return
    clock = StageClock()
    with clock.stage("generate"):
        by_temperature = Verifier(model, arms, config).full(chosen, controls)
    with clock.stage("kl+perplexity"):
        kl, perplexity = _edit_checks(out, source, exact_model, tokenizer, chosen, controls, config)
    touched = build_patch(exact_model, chosen.requests).touched_fraction
    checks = acceptance_checks(
        by_temperature["0.0"],
        None,
        kl["patched"],
        touched,
        perplexity["patched"]["ratio"],
        None,
        config,
    )
    failed = [name for name, ok in checks.items() if not ok]
    verdict = f"accepted: {chosen.label()}" if not failed else "rejected: " + ", ".join(failed)
    print(verdict, flush=True)
    # The candidate as a patch file either way (`loopfix patch apply` exports it to GGUF and HF),
    # under the verdict's name so a rejected edit is never mistaken for a repair.
    patch = build_patch(
        exact_model,
        chosen.requests,
        model_id=MODEL,
        metrics={"by_temperature": by_temperature, "kl": kl["patched"], "checks": checks},
        provenance={"source": source, "candidate": chosen.to_dict(), "driver": __file__},
    )
    folder = tagged(out, "verify", source)
    save_patch(patch, folder / ("patch" if not failed else "rejected_candidate"))
    write_json_atomic(
        folder / f"verify-T{'-'.join(f'{t:g}' for t in temperatures)}.json",
        {
            "candidate": {**chosen.to_dict(), "label": chosen.label(), "screening": best},
            "controls": [{**c.to_dict(), "seed": s} for s, c in zip(seeds, controls, strict=True)],
            "by_temperature": by_temperature,
            "kl": kl,
            "perplexity": perplexity,
            "touched_fraction": touched,
            "checks": checks,
            "accepted": not failed,
            "verdict": verdict,
            "config": config.model_dump(mode="json"),
            "timing": clock.to_dict(),
            "prompts_compared": len(only) if only is not None else PROMPTS,
        },
    )


def _spearman(x: list[float], y: list[float]) -> dict[str, float]:
    result = spearmanr(x, y)
    return {"rho": float(result.statistic), "p": float(result.pvalue), "n": len(x)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=["scan", "search", "screen", "tune", "verify"])
    parser.add_argument("--out", type=Path, default=Path("runs/repair-smollm2"))
    parser.add_argument("--scans", nargs="*", choices=list(BASE_SCANS), default=[])
    parser.add_argument(
        "--source",
        choices=list(SOURCES),
        default="scan",
        help="search/screen/verify: which repair source's pairs, candidates and arms",
    )
    parser.add_argument(
        "--part",
        type=lambda text: tuple(int(x) for x in text.split("/")),
        default=None,
        help="screen/verify: I/N generates only every N-th arm from the I-th (run N side by side, "
        "then once without --part to collect); screen --part 0/0: only the base arm",
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="verify: compare the arms as they stand, on the prompts every arm has finished",
    )
    parser.add_argument(
        "--temperatures", type=float, nargs="+", default=[0.0], help="verify: temperatures"
    )
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default=DTYPE,
        help="generation dtype of every arm (scan.json records it; a resumed arm must match)",
    )
    args = parser.parse_args(argv)
    globals()["DTYPE"] = args.dtype
    if args.stage == "scan":
        stage_scan(args.out, args.scans)
    elif args.stage == "verify":
        stage_verify(args.out, args.temperatures, args.part, args.partial, args.source)
    elif args.stage == "screen":
        stage_screen(args.out, args.part, args.source)
    elif args.stage == "tune":
        stage_tune(args.out, args.source)
    else:
        stage_search(args.out, args.source)


if __name__ == "__main__":
    sys.exit(main())
