"""The repair settings: one pydantic object, one field per CLI flag."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loopfix.cpu import native_bf16
from loopfix.lab.stargraph import WALK_CAP
from loopfix.records import MAX_PROMPTS, Temperature

__all__ = [
    "PLAIN_TEXT",
    "PRESETS",
    "PRESET_FIELDS",
    "SUITE",
    "SUITE_CAP",
    "TESTBED",
    "PresetName",
    "RepairConfig",
    "SourceName",
]

SourceName = Literal["testbed", "scan", "rescue", "outcome"]

# Generation caps when none is given: a star-graph walk's (`lab.stargraph.WALK_CAP`, 48); a chat
# model's answer to an `arith` prompt runs 100-250 tokens, and at 48 SmolLM2's loops (periods up
# to 125 tokens) would be cut before their first repeat.
SUITE_CAP = 256

# The two presets a repair is built from (`RepairConfig.preset`). TESTBED: the star-graph
# testbed's repair, the fields' own defaults. SUITE: a repair from scan records (a suite or
# records given), where it differs from the testbed's. They are the settings of the search that
# found the accepted SmolLM2 patch (docs/repair.md, "the outcome source, accepted"): a real
# model's loops sit in one region of a 30-layer stack, which only a search over every layer finds
# (the first-order proxy); its k=64 edit won; alpha 1 was never a structure's best strength in its
# screenings (training prompts, 8 structures across two scans), so the arms go to a third
# structure instead; a branch of a few hundred tokens through a 30-layer model needs small probe
# batches (8: probing and exact scoring; the first-order proxy's gradients go in row groups of
# `linear_proxy.GRADIENT_TOKENS` ids); chat models loop at greedy, and T=0.6 gives the converging
# runs the outcome source pairs them with; an own scan of 400 suite items (200 gave SmolLM2 24 +
# 26 pairs, too few to rank its layers: the pick was L19; 400 gave 47 + 51 and a direction that
# halves held-out loops); 200 held-out prompts are what a McNemar test needs to see a halving;
# 0.1% of the weights is the most a real-model patch may touch; 64 answers of a few hundred tokens
# per decode batch is the driver's batch of 40 rounded up (a batch of 500 holds ~4 GB of cache for
# no measured gain); 48 normal answers for the KL (the driver used 12: on SmolLM2 the exact
# scoring of the chosen edit and its control over 150 took 8 minutes).
# Plain text no suite prompt resembles (six topics of the Python 3.11.7 language reference,
# shipped in `pydoc_data`, PSF license): the general-ability check of a real model's repair.
PLAIN_TEXT = Path(__file__).parent / "plain_text" / "python-3.11-reference.txt"

TESTBED: dict[str, Any] = {}

SUITE: dict[str, Any] = {
    "search": "linear",
    "ks": (8, 32, 64),
    "alphas": (2.0, 4.0, 6.0),
    "verify_top": 3,
    "batch_size": 8,
    "temperature": 0.0,
    "temperatures": (0.0, 0.6),
    "prompts": 200,
    "n": 400,
    "max_touched_fraction": 0.001,
    "gen_dtype": "auto",
    "gen_batch_size": 64,
    "kl_walks": 48,
    "perplexity_text": PLAIN_TEXT,
}

PresetName = Literal["testbed", "suite"]
PRESETS: dict[PresetName, dict[str, Any]] = {"testbed": TESTBED, "suite": SUITE}
PRESET_FIELDS = frozenset(SUITE) | frozenset(TESTBED)  # the fields whose default is the preset's


class RepairConfig(BaseModel):
    """Everything that determines a repair run (seeds included: same inputs, same patch).

    `RepairConfig(...)` starts from the fields' own defaults, the TESTBED preset; a repair from
    scan records starts from the SUITE preset, chosen where the config is built:
    `RepairConfig.preset("suite", suite="arith")` (what `loopfix repair --suite` and the doctor
    do)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    train_pairs: int = Field(300, ge=8, description="matched branch pairs for the directions")
    heldout_pairs: int = Field(200, ge=8, description="held-out pairs for the selectivity proxy")
    kl_walks: int = Field(150, ge=8, description="normal teacher walks for the KL check")
    kl_positions: int = Field(
        16, ge=1, description="most states per normal walk in the KL check (bounds memory)"
    )
    repeats: int = Field(3, ge=2, description="copies of the excursion in a training branch")
    proxy_repeats: int = Field(
        6, ge=2, description="copies in a held-out branch (the flywheel runs from 4 copies on)"
    )
    branch_seed: int = Field(
        31337, description="seed of the training pairs (held-out: +1, normal walks: +2)"
    )
    batch_size: int = Field(256, ge=1, description="sequences per probe/scoring forward pass")
    sites: tuple[Literal["down_proj", "attn_out"], ...] = Field(
        ("down_proj", "attn_out"), description="edit sites searched: MLP and token-mixer outputs"
    )
    max_layers: int = Field(2, ge=1, le=2, description="layers edited together (1 or 2)")
    search_layers: int = Field(
        2, ge=1, description="layers searched: the ones with the largest separation"
    )
    ks: tuple[Annotated[int, Field(ge=1, strict=True)], ...] = Field(
        (8, 32), min_length=1, description="columns per edited layer (grid)"
    )
    alphas: tuple[Annotated[float, Field(gt=0)], ...] = Field(
        (1.0, 2.0, 4.0, 6.0), min_length=1, description="edit strengths (grid)"
    )
    max_kl: float = Field(0.1, gt=0, description="KL budget (nats/token) on normal walks")
    search: Literal["grid", "linear", "neuron"] = Field(
        "grid",
        description="'grid' scores every candidate exactly on the layers of largest separation; "
        "'linear' ranks every layer x site x k by the first-order proxy and screens its "
        "`verify_top` best and the two-layer edit of its two best layers at every alpha by "
        "generation (default from scan records); 'neuron' scores exactly every edit that scales "
        "the `neuron_counts` MLP units separating most by each of `neuron_scales`, on the "
        "`search_layers` layers where a unit separates most, controlled by random units of the "
        "same layer",
    )
    neuron_counts: tuple[Annotated[int, Field(ge=1, le=64, strict=True)], ...] = Field(
        (1, 2, 4, 8), min_length=1, description="MLP units edited together (neuron search)"
    )
    neuron_scales: tuple[Annotated[float, Field(ge=-8, le=8)], ...] = Field(
        (-1.0, 0.0, 0.5),
        min_length=1,
        description="factors on the units' output columns (neuron search): -1 flips, 0 silences",
    )
    verify_top: int = Field(2, ge=1, description="candidates screened by generation")
    causal_prompts: int = Field(
        500,
        ge=50,
        le=MAX_PROMPTS,
        description="prompts of the activation-level check and of the screening of candidates "
        "(seed: verify_seed + 1)",
    )
    prompts: int = Field(
        1000,
        ge=50,
        le=MAX_PROMPTS,
        description="held-out prompts of the verification (from scan records of a built-in "
        "suite: fresh ones at `verify_seed`; of a suite file: a quarter of its prompts)",
    )
    temperature: Temperature = Field(0.6, description="primary verification temperature")
    temperatures: tuple[Temperature, ...] = Field(
        (0.0, 0.6, 1.0), min_length=1, description="all verification temperatures"
    )
    max_new_tokens: int | None = Field(
        None,
        ge=8,
        description=f"generation cap of the testbed's walks and of the own scan on a suite; None: "
        f"{WALK_CAP} on the testbed, {SUITE_CAP} on a suite",
    )
    verify_seed: int = Field(20240, description="seed of the verification prompts and sampler")
    control_seed: int = Field(
        77, description="seed of the first random-direction control (the others: +1, +2, ...)"
    )
    control_seeds: int = Field(
        3, ge=1, description="random-direction controls, each norm-matched to the candidate"
    )
    min_reduction: float = Field(
        0.5, gt=0, le=1, description="relative loop reduction a patch must reach at --temperature"
    )
    significance: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="largest McNemar p-value counted as significant: an accepted loop "
        "reduction or rise in success, a fall in success",
    )
    control_share: float = Field(
        0.5,
        gt=0,
        le=1,
        description="every control's loop reduction must stay below this share of the patch's",
    )
    verify_screened_out: bool = Field(
        False,
        description="verify the screening's pick even when it already fails (over the "
        "perplexity budget, losing answers significantly, or removing no loop and recovering no "
        "answer net); off: stop after screening with the reason",
    )
    perplexity_text: Path | None = Field(
        None,
        description="plain text (UTF-8, not from the suite) of the general-ability check; None: "
        "no perplexity check (the testbed has no natural-language vocabulary); from scan "
        "records: the bundled Python language reference excerpt (PLAIN_TEXT)",
    )
    perplexity_tokens: int = Field(
        4096, ge=64, description="tokens of the perplexity text used (windows of 256)"
    )
    max_perplexity_increase: float = Field(
        0.02, ge=0, description="relative perplexity increase allowed on the plain text"
    )
    gen_batch_size: int = Field(500, ge=1, description="prompts per generation batch")
    gen_dtype: Literal["float32", "bfloat16", "auto"] = Field(
        "float32",
        description="dtype of every generation (scans, arms); probing, the proxy, KL and "
        "perplexity stay float32. 'auto': bfloat16 on a CPU that multiplies it natively "
        "(avx512_bf16 or amx_bf16), else float32",
    )
    max_touched_fraction: float = Field(
        0.01, gt=0, le=1, description="candidates touching more of the weights are not searched"
    )
    positions: Literal["mode", "decision"] = Field(
        "decision",
        description="branch states probed: 'mode' = every state after the first copy; "
        "'decision' = only the arm choices at the root after the first copy",
    )
    source: SourceName | None = Field(
        None,
        description="where the branch pairs come from: 'testbed' (the star-graph teacher), "
        "'scan' (loop vs non-looping resample), 'rescue' (loop vs the engine's rescue at its "
        "first repeat, greedy and sampled) or 'outcome' (looping vs converging runs of the same "
        "prompt, the seed's construction); None: 'testbed' without a suite or records; with them "
        "'outcome' where the records hold two or more samples of a prompt (the own scan runs "
        "every `temperatures`), else "
        "'rescue' (on SmolLM2 the outcome pairs are the ones whose first-order proxy ranks edits "
        "as generation does, rho 0.90; docs/repair.md)",
    )
    suite: str | None = Field(
        None,
        description="suite (built-in name or JSON-lines file) of the branches from scan records; "
        "None with no `records`: the testbed teacher's branches",
    )
    n: int | None = Field(
        None,
        ge=4,
        le=MAX_PROMPTS,
        description="suite items of the repair's own scan (None with a suite: 400)",
    )
    records: Path | None = Field(
        None,
        description="records.jsonl of a `loopfix scan` of the model; None with a suite: the "
        "repair scans the suite itself into OUT/scan (cap `max_new_tokens`)",
    )
    extra_records: tuple[Path, ...] = Field(
        (),
        description="records.jsonl of further scans merged with `records`: the same model, "
        "suite and decode settings at other seeds (the doctor's top-up when its measure scan "
        "holds too few loops)",
    )

    @classmethod
    def preset(cls, name: PresetName, **given: Any) -> RepairConfig:
        """The preset `name` with `given` over it; a field the presets set that is given as None
        (an option left out) keeps the preset's value."""
        kept = {k: v for k, v in given.items() if v is not None or k not in PRESET_FIELDS}
        return cls(**{**PRESETS[name], **kept})

    @model_validator(mode="before")
    @classmethod
    def _primary_temperature_is_verified(cls, data: Any) -> Any:
        """The primary temperature is always among the verification temperatures."""
        if isinstance(data, dict) and data.get("temperature") is not None:
            temperatures = data.get("temperatures")
            if temperatures is None:
                temperatures = cls.model_fields["temperatures"].default
            data = {**data, "temperatures": tuple(sorted({*temperatures, data["temperature"]}))}
        return data

    @property
    def generation_dtype(self) -> str:
        """`gen_dtype` with 'auto' decided for this CPU."""
        if self.gen_dtype != "auto":
            return self.gen_dtype
        return "bfloat16" if native_bf16() else "float32"

    @property
    def cap(self) -> int:
        """The generation cap in force (`max_new_tokens`, or the default for the source)."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens
        return SUITE_CAP if self.suite is not None or self.records is not None else WALK_CAP

    @model_validator(mode="after")
    def _neurons_are_probed(self) -> RepairConfig:
        if self.search == "neuron" and "down_proj" not in self.sites:
            raise ValueError("search='neuron' edits MLP units: sites must include down_proj")
        if 1.0 in self.neuron_scales:
            raise ValueError("neuron_scales: a factor of 1 changes nothing")
        return self
