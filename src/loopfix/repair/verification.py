"""The generation side of a repair: base, candidates and control on held-out prompts."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from loopfix.lab.stargraph import make_graphs
from loopfix.lab.train import TrainConfig
from loopfix.patch import build_patch, patched
from loopfix.repair.candidates import Candidate
from loopfix.repair.config import RepairConfig
from loopfix.repair.verify import Outcomes, compare_outcomes, generate_outcomes

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["Verifier", "temperature_key"]


def temperature_key(temperature: float) -> str:
    return f"{temperature:.1f}"


class Verifier:
    """Generates on the verification prompts (seed `verify_seed`) and the causal-check prompts
    (seed `verify_seed + 1`); base outcomes are generated once and reused."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        task: TrainConfig,
        config: RepairConfig,
    ) -> None:
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.graphs = {
            "verify": make_graphs(config.verify_seed, config.prompts, task.arms, task.depth),
            "causal": make_graphs(
                config.verify_seed + 1, config.causal_prompts, task.arms, task.depth
            ),
        }
        self._base: dict[tuple[str, float], Outcomes] = {}
        self._edited: dict[tuple[str, str, float, float, float], Outcomes] = {}

    def run(
        self, prompts: str, temperature: float, context: AbstractContextManager[Any] | None = None
    ) -> Outcomes:
        with context or nullcontext():
            return generate_outcomes(
                self.model,
                self.tokenizer,
                self.graphs[prompts],
                temperature,
                self.config.max_new_tokens,
                self.config.verify_seed,
                self.config.gen_batch_size,
            )

    def base(self, prompts: str, temperature: float) -> Outcomes:
        if (prompts, temperature) not in self._base:
            self._base[prompts, temperature] = self.run(prompts, temperature)
        return self._base[prompts, temperature]

    def edited(self, candidate: Candidate, temperature: float, prompts: str = "verify") -> Outcomes:
        """Outcomes with the candidate applied."""
        # Control and candidate share sites, k (and maybe alpha): the directions tell them apart.
        key = (
            prompts,
            candidate.label(),
            candidate.alpha,
            float(candidate.requests[0].direction.sum()),
            temperature,
        )
        if key not in self._edited:
            patch = build_patch(self.model, candidate.requests)
            self._edited[key] = self.run(prompts, temperature, patched(self.model, patch))
        return self._edited[key]

    def screen(self, candidates: Sequence[Candidate]) -> tuple[Candidate, list[dict[str, Any]]]:
        """The candidate that removes most loops net at the primary temperature without losing
        success (rescues >= regressions); failing that, the one that removes most loops.

        Screened on the causal-check prompts, so the final verification prompts are not the ones
        a candidate was picked on (no winner's curse in the reported numbers)."""
        temperature = self.config.temperature
        base = self.base("causal", temperature)
        rows = []
        for candidate in candidates:
            outcomes = self.edited(candidate, temperature, "causal")
            rows.append(
                {**candidate.to_dict(), **outcomes.summary(), **compare_outcomes(base, outcomes)}
            )

        def key(row: dict[str, Any]) -> tuple[bool, int]:
            return (row["rescues"] >= row["regressions"], row["loops_removed"] - row["loops_added"])

        best = max(range(len(rows)), key=lambda i: key(rows[i]))
        return candidates[best], rows

    def full(self, chosen: Candidate, control: Candidate) -> dict[str, dict[str, Any]]:
        """Base, patched and control at every temperature, each arm paired with the base."""
        by_temperature = {}
        for temperature in self.config.temperatures:
            base = self.base("verify", temperature)
            arms = {
                "patched": self.edited(chosen, temperature),
                "random_control": self.edited(control, temperature),
            }
            by_temperature[temperature_key(temperature)] = {
                "base": base.summary(),
                **{name: outcomes.summary() for name, outcomes in arms.items()},
                "paired": {name: compare_outcomes(base, o) for name, o in arms.items()},
            }
        return by_temperature
