"""Fit the hidden-state probe on the corpus's tune part and evaluate it (docs/states.md).

    python bench/eval_state_probe.py [--cache .cache/states] [--write-probe] [--heldout]

1. Features: SmolLM2-135M-Instruct's mean-pooled hidden states of every corpus text (last 512
   tokens, every layer), cached in CACHE keyed by the corpus's sha256, so reruns cost nothing.
2. Choice on tune only: layer set x L2 strength by grouped 5-fold cross-validation (groups =
   the split's source groups, so one prompt never sits on both sides of a fold); the out-of-fold
   probabilities give the tune figures and the probe's threshold: the lowest threshold at which
   "detector OR probe" keeps precision >= 0.95 on tune.
3. The probe refitted on the whole tune part; `--write-probe` writes it to
   src/loopfix/states/smollm2_probe.json with its provenance.
4. `--heldout`: the one held-out evaluation, summary numbers only.

scikit-learn fits the probe here (bench only: loopfix does not depend on it); the shipped
probe scores in numpy (`loopfix.states.probe`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold

from loopfix.detect import detect_text
from loopfix.detect.corpus import CorpusItem, read_corpus
from loopfix.states.features import SCORER_MODEL, STATE_TOKENS, layer_features
from loopfix.states.probe import (
    SHIPPED_PROBE,
    ProbeProvenance,
    StateProbe,
    load_probe,
    sigmoid,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data/detect_corpus_real/corpus.jsonl"
CHUNK = 64
LAYER_SETS = ((20,), (10, 20, 30), (15,), (25,), (10, 20), (20, 25, 30))
STRENGTHS = (0.001, 0.01, 0.1, 1.0)  # C = 1 / L2 strength, on standardised features
FOLDS = 5
MIN_PRECISION = 0.95
GSM8K_SOURCE = "gsm8k_evaluation_results_deepseek-r1-distill-llama-8b"
SPLIT_RULE = (
    "data/detect_corpus_real/README.md: by source group, sha256(group) first hex digit even = "
    "held out; fitted and chosen on the tune part only"
)


def corpus_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cached_states(items: list[CorpusItem], cache: Path, digest: str) -> np.ndarray:
    """Every item's pooled states, (items, layers + 1, hidden), computed in chunks saved as they
    finish (a stopped run resumes)."""
    from loopfix.models import load_model
    from loopfix.states.features import pooled_states

    folder = cache / f"states-{digest[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    model = tokenizer = None
    chunks = []
    for start in range(0, len(items), CHUNK):
        path = folder / f"{start:05d}.npy"
        if not path.exists():
            if model is None:
                model, tokenizer = load_model(SCORER_MODEL)
            begun = time.perf_counter()
            texts = [item.text for item in items[start : start + CHUNK]]
            np.save(path, pooled_states(model, tokenizer, texts))
            print(f"states {start}-{start + len(texts)}: {time.perf_counter() - begun:.0f} s")
        chunks.append(np.load(path))
    return np.concatenate(chunks)


def cv_group(item_id: str, source: str) -> str:
    """The source group of an item for cross-validation folds (model and prompt, as the split's
    groups): sampled variants of one prompt (temperature, steering sign, sample number) share
    a fold."""
    if source.startswith("loopfix scan"):
        return re.sub(r"-t[0-9.]+$", "", item_id)
    source = re.sub(r"/(positive|negative|none|original)\)$", ")", source)
    return re.sub(r"/(thinking|output)/\d+\)$", ")", source)


def sources(path: Path) -> dict[str, str]:
    return {row["id"]: row["source"] for row in map(json.loads, path.open(encoding="utf-8"))}


def fit(features: np.ndarray, labels: np.ndarray, strength: float) -> tuple[np.ndarray, ...]:
    """(mean, scale, weights, bias) of an L2 logistic model on standardised features."""
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=strength, max_iter=5000)
    model.fit((features - mean) / scale, labels)
    return mean, scale, model.coef_[0], model.intercept_


def out_of_fold(
    features: np.ndarray, labels: np.ndarray, groups: list[str], strength: float
) -> np.ndarray:
    folds = StratifiedGroupKFold(n_splits=FOLDS, shuffle=True, random_state=0)
    probabilities = np.empty(len(labels))
    for train, test in folds.split(features, labels, groups):
        mean, scale, weights, bias = fit(features[train], labels[train], strength)
        probabilities[test] = sigmoid(((features[test] - mean) / scale) @ weights + bias[0])
    return probabilities


def auc(labels: np.ndarray, scores: np.ndarray, mask: np.ndarray | None = None) -> float:
    if mask is not None:
        labels, scores = labels[mask], scores[mask]
    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else float("nan")


def precision_recall(flags: np.ndarray, labels: np.ndarray, semantic: np.ndarray) -> str:
    flagged = int(flags.sum())
    true = int((flags & labels).sum())
    precision = true / flagged if flagged else float("nan")
    found = int((flags & semantic).sum())
    return (
        f"{flagged:>7} {precision:>9.3f} {true / labels.sum():>6.3f} "
        f"{found:>4}/{int(semantic.sum())}"
    )


def lowest_threshold(detector: np.ndarray, probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The lowest probe threshold at which "detector OR probe" keeps precision >= 0.95 (the
    most recall the precision bar allows)."""
    for threshold in np.unique(probabilities):
        flags = detector | (probabilities >= threshold)
        if (flags & labels).sum() >= MIN_PRECISION * flags.sum():
            return float(threshold)
    return 1.0


def report(
    title: str,
    probabilities: np.ndarray,
    threshold: float,
    detector: np.ndarray,
    labels: np.ndarray,
    kinds: np.ndarray,
    gsm8k: np.ndarray,
) -> dict[str, float]:
    semantic = kinds == "semantic"
    clean = ~labels
    within = auc(labels, probabilities, gsm8k)
    semantic_within = auc(labels, probabilities, gsm8k & (semantic | clean))
    overall = auc(labels, probabilities)
    print(
        f"{title}: {len(labels)} items, {int(labels.sum())} loops ({int(semantic.sum())} semantic)"
    )
    print(
        f"AUC loop vs clean {overall:.3f}; within R1-Distill-Llama-8B GSM8K ({int(gsm8k.sum())} "
        f"items): loop vs clean {within:.3f}, semantic vs clean {semantic_within:.3f}"
    )
    probe = probabilities >= threshold
    print(f"{'tier':18} {'flagged':>7} {'precision':>9} {'recall':>6} semantic")
    for name, flags in (
        ("detector", detector),
        (f"probe >= {threshold:.3f}", probe),
        ("detector OR probe", detector | probe),
    ):
        print(f"{name:18} {precision_recall(flags, labels, semantic)}")
    either = detector | probe
    return {
        "auc": round(overall, 4),
        "auc_gsm8k": round(within, 4),
        "auc_gsm8k_semantic": round(semantic_within, 4),
        "precision_or": round(float((either & labels).sum() / either.sum()), 4),
        "recall_or": round(float((either & labels).sum() / labels.sum()), 4),
        "semantic_recall_or": round(float((either & semantic).sum() / semantic.sum()), 4),
    }


def corpus_commit(path: Path) -> str:
    command = ["git", "log", "-1", "--format=%H", "--", str(path)]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "states")
    parser.add_argument("--features-only", action="store_true")
    parser.add_argument("--write-probe", action="store_true", help="write the shipped probe")
    parser.add_argument(
        "--heldout", action="store_true", help="the one held-out evaluation of the shipped probe"
    )
    args = parser.parse_args()
    items = read_corpus(args.corpus)
    states = cached_states(items, args.cache, corpus_sha256(args.corpus))
    if args.features_only:
        return
    source = sources(args.corpus)
    split = np.array([item.split for item in items])
    labels = np.array([item.label == "loop" for item in items])
    kinds = np.array([item.kind for item in items])
    gsm8k = np.array([GSM8K_SOURCE in source[item.id] for item in items])
    detector = np.array(
        [detect_text(item.text, cut=item.cut).looping for item in items]
    )  # the defaults, cut told where known
    tune = split == "tune"
    tune_groups = [cv_group(item.id, source[item.id]) for item in items if item.split == "tune"]

    print(f"tune: {FOLDS}-fold grouped cross-validation, out-of-fold AUC")
    print(f"{'layers':12} {'C':>6} {'AUC':>6} {'gsm8k':>6} {'gsm8k sem':>9}")
    best: tuple[float, tuple[int, ...], float, np.ndarray] | None = None
    for layers in LAYER_SETS:
        features = layer_features(states[tune], layers)
        for strength in STRENGTHS:
            oof = out_of_fold(features, labels[tune], tune_groups, strength)
            score = auc(labels[tune], oof)
            sem = gsm8k[tune] & ((kinds[tune] == "semantic") | ~labels[tune])
            print(
                f"{'+'.join(map(str, layers)):12} {strength:>6} {score:>6.3f} "
                f"{auc(labels[tune], oof, gsm8k[tune]):>6.3f} {auc(labels[tune], oof, sem):>9.3f}"
            )
            if best is None or score > best[0]:
                best = (score, layers, strength, oof)
    assert best is not None
    _, layers, strength, oof = best
    threshold = lowest_threshold(detector[tune], oof, labels[tune])
    print(
        f"chosen: layers {layers}, C = {strength} (highest out-of-fold AUC); "
        f"threshold {threshold:.4f}"
    )
    metrics = report(
        "tune (out-of-fold)", oof, threshold, detector[tune], labels[tune], kinds[tune], gsm8k[tune]
    )
    if args.write_probe:
        mean, scale, weights, bias = fit(
            layer_features(states[tune], layers), labels[tune], strength
        )
        probe = StateProbe(
            scorer=SCORER_MODEL,
            max_tokens=STATE_TOKENS,
            layers=layers,
            mean=mean,
            scale=scale,
            weights=weights,
            bias=round(float(bias[0]), 6),
            threshold=round(threshold, 4),
            provenance=ProbeProvenance(
                corpus="data/detect_corpus_real/corpus.jsonl",
                corpus_commit=corpus_commit(args.corpus),
                split_rule=SPLIT_RULE,
                features=(
                    f"{SCORER_MODEL} hidden states, last {STATE_TOKENS} tokens (no special "
                    f"tokens), mean-pooled, layers {'+'.join(map(str, layers))} concatenated, "
                    "standardised on tune"
                ),
                regularisation=(
                    f"L2 logistic regression, C = {strength}; layer set and C chosen by the "
                    f"highest out-of-fold AUC of {FOLDS}-fold grouped cross-validation on tune "
                    f"over layers {[list(s) for s in LAYER_SETS]} x C {list(STRENGTHS)}"
                ),
                threshold_rule=(
                    "lowest threshold on the out-of-fold tune probabilities at which 'detector "
                    f"OR probe' (detector defaults, cut told) keeps precision >= {MIN_PRECISION}"
                ),
                tune_metrics=metrics,
            ),
        )
        text = json.dumps(probe.to_json(), indent=1) + "\n"
        SHIPPED_PROBE.write_text(text, encoding="utf-8")
        print(f"wrote {SHIPPED_PROBE.relative_to(ROOT)} ({len(text.encode()) // 1024} KB)")
    if args.heldout:
        shipped = load_probe()
        held = ~tune
        probabilities = shipped.probability(layer_features(states[held], shipped.layers))
        report(
            "HELD-OUT (once)",
            probabilities,
            shipped.threshold,
            detector[held],
            labels[held],
            kinds[held],
            gsm8k[held],
        )


if __name__ == "__main__":
    main()
