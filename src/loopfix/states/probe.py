"""The shipped hidden-state probe: a logistic model over a scorer's pooled states, and its
combination with the text tiers ("detector OR probe").

The probe is data (`smollm2_probe.json`, fitted by bench/eval_state_probe.py on the corpus's
tune part): standardisation (`mean`, `scale`), `weights`, `bias`, the `threshold` at which it
fires, and the provenance of each. Scoring is numpy: p = sigmoid(w . (x - mean) / scale + b).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import TypeAdapter

from loopfix.detect import LoopVerdict

PROBE_VERSION = 1
SHIPPED_PROBE = Path(__file__).with_name("smollm2_probe.json")
DECIDED_BY = "states"
"""`decided_by` of a verdict that only the probe found."""


@dataclass(frozen=True)
class ProbeProvenance:
    """Where the probe's numbers come from."""

    corpus: str
    corpus_commit: str
    split_rule: str
    features: str
    regularisation: str
    threshold_rule: str
    tune_metrics: dict[str, float]


@dataclass(frozen=True)
class StateProbe:
    """A logistic probe over the mean-pooled states of `layers` of `scorer` (last `max_tokens`
    tokens of a text)."""

    scorer: str
    max_tokens: int
    layers: tuple[int, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    provenance: ProbeProvenance

    def __post_init__(self) -> None:
        sizes = {len(self.mean), len(self.scale), len(self.weights)}
        if len(sizes) != 1:
            raise ValueError(f"probe: mean, scale and weights differ in length ({sorted(sizes)})")
        if np.any(self.scale <= 0):
            raise ValueError("probe: every scale must be positive")

    def probability(self, features: np.ndarray) -> np.ndarray:
        """The probe's loop probability for each row of `features` (texts x features)."""
        return sigmoid(((features - self.mean) / self.scale) @ self.weights + self.bias)

    def fires(self, probability: float) -> bool:
        return probability >= self.threshold

    def to_json(self) -> dict[str, object]:
        return {
            "version": PROBE_VERSION,
            "scorer": self.scorer,
            "max_tokens": self.max_tokens,
            "layers": list(self.layers),
            "threshold": self.threshold,
            "bias": self.bias,
            "mean": rounded(self.mean),
            "scale": rounded(self.scale),
            "weights": rounded(self.weights),
            "provenance": asdict(self.provenance),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> StateProbe:
        if data.get("version") != PROBE_VERSION:
            raise ValueError(f"probe: version {data.get('version')!r}, expected {PROBE_VERSION}")
        layers = data["layers"]
        if not isinstance(layers, list):
            raise ValueError("probe: layers must be a list")
        return cls(
            scorer=str(data["scorer"]),
            max_tokens=int(str(data["max_tokens"])),
            layers=tuple(int(layer) for layer in layers),
            mean=_array(data["mean"]),
            scale=_array(data["scale"]),
            weights=_array(data["weights"]),
            bias=float(str(data["bias"])),
            threshold=float(str(data["threshold"])),
            provenance=TypeAdapter(ProbeProvenance).validate_python(data["provenance"]),
        )


def sigmoid(logits: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-logits)), without overflow for large negative logits."""
    return np.exp(-np.logaddexp(0.0, -logits))


def rounded(values: np.ndarray, digits: int = 5) -> list[float]:
    """`digits` significant digits: the file stays small; at 5 the probability moves < 1e-3."""
    return [float(f"{value:.{digits}g}") for value in values]


def _array(values: object) -> np.ndarray:
    if not isinstance(values, list):
        raise ValueError("probe: mean, scale and weights must be lists of numbers")
    return np.asarray(values, dtype=np.float64)


def load_probe(path: Path = SHIPPED_PROBE) -> StateProbe:
    """The probe stored at `path` (the shipped SmolLM2 probe by default)."""
    return StateProbe.from_json(json.loads(path.read_text(encoding="utf-8")))


def combined_verdict(
    text_verdict: LoopVerdict, probability: float | None, probe: StateProbe
) -> LoopVerdict:
    """ "Detector OR probe": the text tiers' verdict when they find a loop, else a semantic loop
    decided by the states when the probe fires (score = its probability; no onset or period:
    the probe sees the whole tail, not a unit), else not looping."""
    if text_verdict.looping or probability is None or not probe.fires(probability):
        return text_verdict
    return replace(
        LoopVerdict.not_looping(),
        looping=True,
        kind="semantic",
        decided_by=DECIDED_BY,
        score=round(float(probability), 4),
    )


def probe_probabilities(
    probe: StateProbe, texts: Sequence[str], *, batch_size: int = 8
) -> list[float | None]:
    """The probe's probability for each text, from its scorer's states (loads the scorer when
    there is a text); None for an empty text, which has no states to read."""
    from loopfix.models import load_model
    from loopfix.states.features import layer_features, pooled_states

    read = [text for text in texts if text]
    if not read:
        return [None] * len(texts)
    model, tokenizer = load_model(probe.scorer, device="cpu")
    pooled = pooled_states(
        model, tokenizer, read, batch_size=batch_size, max_tokens=probe.max_tokens
    )
    found = iter(probe.probability(layer_features(pooled, probe.layers)).tolist())
    return [next(found) if text else None for text in texts]
