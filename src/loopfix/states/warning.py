"""The own-model early warning: a logistic probe over what a model computes while it generates
(issue 41, point 3), fitted on that model's own scan records.

Features at step t (`window_features`), over the last `window` steps (fewer at the start):
- the mean hidden state of one layer (`steps.StepSignals.hidden`);
- the mean top-1 probability, and the confidence flywheel: that mean minus the mean over the
  `window` steps before (0 while there are none): the top-1 probability climbing;
- the entropy streak: how many steps up to t in a row had entropy under the early-warning
  threshold (`DetectConfig.entropy_threshold`), over `window` (at most `STREAK_WINDOWS`); and
  the mean entropy.

Labels come from the scan's own verdicts: the steps of a looping sample from its loop's onset
on are positive, every other step of it and every step of a sample that ended by itself
without a loop negative; samples cut at the cap without a loop are left out (neither kind).
The probe is an L2 logistic regression on standardised features with the classes weighted
equally (numpy, Newton's method). It warns at the first step whose probability reaches
`threshold`, chosen on the fitting samples so that at most `false_alarm` of the samples that
never loop get a warning anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from loopfix.detect import DetectConfig
from loopfix.errors import LoopfixError, field_problem
from loopfix.states.probe import rounded, sigmoid

if TYPE_CHECKING:
    from loopfix.states.steps import StepSignals

__all__ = [
    "MAX_WINDOW",
    "WarningProbe",
    "choose_threshold",
    "load_warning",
    "default_layer",
    "fit_logistic",
    "step_labels",
    "window_features",
]

ENTROPY_LOW = DetectConfig().entropy_threshold
SIGNALS = 4  # the features after the state: mean top-1, flywheel, entropy streak, mean entropy
STREAK_WINDOWS = 4
"""The entropy streak saturates at this many windows: a step then reads at most that many
entropies back, so its cost does not grow with the output."""
MAX_WINDOW = 4096
"""The widest window a probe reads (`loopfix warn --window`): a feature over more steps than an
output has warns no earlier than the length alone, and a huge one would be allocated per step."""


def _window_means(values: np.ndarray, window: int) -> np.ndarray:
    """Row t: the mean of rows max(0, t - window + 1) .. t."""
    sums = np.cumsum(np.concatenate([np.zeros_like(values[:1]), values]), axis=0)
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    counts = (ends - starts).reshape(-1, *([1] * (values.ndim - 1)))
    means: np.ndarray = (sums[ends] - sums[starts]) / counts
    return means


def default_layer(layers: int) -> int:
    """The layer read when none is given: two thirds deep."""
    return round(2 * layers / 3)


def window_features(signals: StepSignals, window: int, states: bool = True) -> np.ndarray:
    """(tokens, width + 4), or (tokens, 4) without the `states`: the features of every step
    (see the module docstring)."""
    top1 = _window_means(signals.top1.astype(np.float64), window)
    before = np.concatenate([np.full(window, np.nan), top1[:-window]])[: len(top1)]
    flywheel = np.where(np.isnan(before), 0.0, top1 - before)
    streak = np.zeros(len(signals.entropy))
    run = 0
    for t, value in enumerate(signals.entropy):
        run = run + 1 if value < ENTROPY_LOW else 0
        streak[t] = min(run, STREAK_WINDOWS * window) / window
    entropy = _window_means(signals.entropy.astype(np.float64), window)
    columns = [top1, flywheel, streak, entropy]
    if states:
        columns.insert(0, _window_means(signals.hidden.astype(np.float64), window))
    return np.column_stack(columns)


def step_labels(steps: int, onset: int | None) -> np.ndarray:
    """1 from the loop's onset on (a looping sample), else 0."""
    labels = np.zeros(steps, dtype=np.int64)
    if onset is not None:
        labels[max(0, onset) :] = 1
    return labels


def fit_logistic(
    features: np.ndarray, labels: np.ndarray, strength: float, iterations: int = 50
) -> tuple[np.ndarray, float]:
    """(weights, bias) of an L2 logistic regression (penalty 1 / (2 strength) |w|^2, bias free),
    the two classes weighted to equal total weight. `features` are standardised."""
    n, width = features.shape
    positives = int(labels.sum())
    if positives == 0 or positives == n:
        raise ValueError("fitting needs steps of both kinds (looping and not)")
    sample_weight = np.where(labels == 1, n / (2 * positives), n / (2 * (n - positives)))
    design = np.column_stack([features, np.ones(n)])
    penalty = np.full(width + 1, 1.0 / strength)
    penalty[-1] = 0.0
    theta = np.zeros(width + 1)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        gradient = design.T @ (sample_weight * (p - labels)) + penalty * theta
        curvature = sample_weight * p * (1 - p)
        hessian = (design * curvature[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian + 1e-9 * np.eye(width + 1), gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def choose_threshold(clean_maxima: Sequence[float], false_alarm: float) -> float:
    """The lowest threshold at which at most `false_alarm` of the never-looping samples (each
    given by its highest step probability) would get a warning."""
    ordered = sorted(clean_maxima, reverse=True)
    allowed = int(np.floor(false_alarm * len(ordered)))
    if allowed >= len(ordered):
        return 0.0
    return float(np.nextafter(ordered[allowed], np.inf))


@dataclass(frozen=True)
class WarningProbe:
    """A fitted own-model warning: what it reads (`model`, `layer`, `window`), its logistic
    model over standardised features, its threshold, and where each came from."""

    model: str
    layer: int
    window: int
    states: bool  # whether the features include the layer's mean state
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    provenance: Mapping[str, object]

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        logits = ((features - self.mean) / self.scale) @ self.weights + self.bias
        return sigmoid(logits)

    @cached_property
    def _state_weights(self) -> tuple[np.ndarray, float]:
        """The state's part of the logit as (v, c): v . state, averaged over the window, minus
        c (the standardisation is linear, so the window mean moves inside the dot product).
        Computed once: the engine asks for it every step."""
        if not self.states:
            return np.zeros(0), 0.0
        width = len(self.weights) - SIGNALS
        v = self.weights[:width] / self.scale[:width]
        return v, float(self.mean[:width] @ v)

    def project(self, states: np.ndarray) -> np.ndarray:
        """Each row's state dotted with the probe's state weights (zeros without states)."""
        if not self.states:
            return np.zeros(len(states))
        projected: np.ndarray = states.astype(np.float64) @ self._state_weights[0]
        return projected

    def step_probability(
        self, projected: Sequence[float], top1: Sequence[float], entropy: Sequence[float]
    ) -> float:
        """`probabilities(window_features(...))[-1]` from the per-step lists (each as long as
        the output so far), in O(window): what the decode engine asks after every step."""
        window, steps = self.window, len(top1)
        recent = np.asarray(top1[-window:], dtype=np.float64)
        if steps > window:
            earlier = np.asarray(top1[max(0, steps - 2 * window) : steps - window])
            flywheel = recent.mean() - earlier.mean()
        else:
            flywheel = 0.0
        streak = 0
        for value in reversed(entropy[-STREAK_WINDOWS * window :]):
            if value >= ENTROPY_LOW:
                break
            streak += 1
        signals = np.array([recent.mean(), flywheel, streak / window, np.mean(entropy[-window:])])
        width = len(self.weights) - SIGNALS
        logit = (signals - self.mean[width:]) / self.scale[width:] @ self.weights[width:]
        if self.states:
            logit += float(np.mean(projected[-window:])) - self._state_weights[1]
        return float(sigmoid(np.asarray(logit + self.bias)))

    def first_warning(self, probabilities: np.ndarray) -> int | None:
        """The first step at which it warns, or None."""
        fired = np.flatnonzero(probabilities >= self.threshold)
        return int(fired[0]) if len(fired) else None

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "layer": self.layer,
            "window": self.window,
            "states": self.states,
            "mean": rounded(self.mean, 6),
            "scale": rounded(self.scale, 6),
            "weights": rounded(self.weights, 6),
            "bias": self.bias,
            "threshold": self.threshold,
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WarningProbe:
        """A probe from `to_json`'s fields, checked (a pydantic ValidationError if not)."""
        probe = ProbeFile.model_validate(data)
        mean, scale, weights = (np.asarray(v) for v in (probe.mean, probe.scale, probe.weights))
        head = (probe.model, probe.layer, probe.window, probe.states, mean, scale, weights)
        return cls(*head, probe.bias, probe.threshold, probe.provenance)


Positive = Annotated[float, Field(gt=0)]


class ProbeFile(BaseModel):
    """warning_probe.json as `to_json` writes it: every type as written, the vectors one per
    feature (`SIGNALS` of them after the state's width when the probe reads `states`)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    model: str = Field(min_length=1)
    layer: int = Field(ge=0)
    window: int = Field(ge=1, le=MAX_WINDOW)
    states: bool
    mean: list[float]
    scale: list[Positive]
    weights: list[float]
    bias: float
    threshold: float
    provenance: dict[str, Any]

    @model_validator(mode="after")
    def _one_per_feature(self) -> ProbeFile:
        lengths = {len(self.mean), len(self.scale), len(self.weights)}
        width = min(lengths) - SIGNALS
        if len(lengths) > 1 or width < 0 or (width > 0) != self.states:
            raise ValueError(
                f"mean, scale and weights need one number per feature, {SIGNALS} signals after "
                f"the state's width when states is true (lengths {sorted(lengths)})"
            )
        return self


def load_warning(path: str | Path, model: str) -> WarningProbe:
    """A probe `loopfix warn` wrote (warning_probe.json), checked against `model`, the one it
    will read while generating: fitted on it, a layer it has, its states' width (the engine
    would otherwise fail mid-run). Anything else is one line naming the file and field."""
    from transformers import AutoConfig

    from loopfix.models import resolve_model_path

    where = f"--warning: {path}"
    try:
        data = ProbeFile.model_validate_json(Path(path).read_bytes())
    except ValidationError as error:  # not JSON, not UTF-8, or a field
        raise LoopfixError(field_problem(where, error, "a warning probe")) from None
    probe = WarningProbe.from_json(data.model_dump())
    if probe.model != model and _where(probe.model) != _where(model):
        raise LoopfixError(
            f"{where}: model: fitted on {probe.model!r}, not {model!r}; fit one on this "
            "model's own scan (`loopfix warn`)"
        )
    text = AutoConfig.from_pretrained(resolve_model_path(model)).get_text_config()
    if probe.layer > text.num_hidden_layers:
        raise LoopfixError(
            f"{where}: layer: {model} has layers 0..{text.num_hidden_layers}, not {probe.layer}"
        )
    width = len(probe.weights) - SIGNALS
    if probe.states and width != text.hidden_size:
        raise LoopfixError(
            f"{where}: weights: {width} state weights, but {model}'s hidden states have "
            f"{text.hidden_size}"
        )
    return probe


def _where(spec: str) -> str:
    """What a model spec points at, so that two spellings of one folder compare equal."""
    from loopfix.models import resolve_model_path

    try:
        path = Path(resolve_model_path(spec))
    except LoopfixError:
        return spec
    return str(path.resolve()) if path.is_dir() else str(path)
