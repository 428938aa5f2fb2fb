"""The shipped hidden-state probe as data: scoring by hand, the file's provenance, and the
"detector OR probe" combination."""

import json
import math
import re

import numpy as np
import pytest

from loopfix.detect import LoopVerdict
from loopfix.states import SHIPPED_PROBE, StateProbe, combined_verdict, load_probe


def constructed_probe(threshold: float = 0.6) -> dict[str, object]:
    return {
        "version": 1,
        "scorer": "loopfix:smollm2",
        "max_tokens": 512,
        "layers": [0],
        "threshold": threshold,
        "bias": 0.25,
        "mean": [0.5, 1.0, 1.0],
        "scale": [0.5, 2.0, 4.0],
        "weights": [1.0, -2.0, 0.5],
        "provenance": {
            "corpus": "made up",
            "corpus_commit": "0" * 40,
            "split_rule": "none",
            "features": "three numbers",
            "regularisation": "none",
            "threshold_rule": "by hand",
            "tune_metrics": {"auc": 1.0},
        },
    }


def test_scoring_equals_a_hand_computation(tmp_path):
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(constructed_probe()))
    probe = load_probe(path)
    # standardised: (1, 0.5, 0.5); logit = 1 - 1 + 0.25 + 0.25 = 0.5
    expected = 1 / (1 + math.exp(-0.5))
    probabilities = probe.probability(np.array([[1.0, 2.0, 3.0], [0.5, 1.0, 1.0]]))
    assert probabilities == pytest.approx([expected, 1 / (1 + math.exp(-0.25))])
    assert probe.fires(expected) and not probe.fires(0.59)
    assert StateProbe.from_json(probe.to_json()).to_json() == probe.to_json()


def test_a_bad_probe_file_is_refused(tmp_path):
    data = constructed_probe()
    data["scale"] = [0.5, 0.0, 4.0]
    with pytest.raises(ValueError, match="scale"):
        StateProbe.from_json(data)
    data = constructed_probe()
    data["version"] = 2
    with pytest.raises(ValueError, match="version"):
        StateProbe.from_json(data)


def test_detector_or_probe():
    probe = StateProbe.from_json(constructed_probe(threshold=0.6))
    clean = LoopVerdict.not_looping()
    found = combined_verdict(clean, 0.8, probe)
    assert (found.looping, found.kind, found.decided_by, found.score) == (
        True,
        "semantic",
        "states",
        0.8,
    )
    assert found.onset is None and found.period is None
    assert combined_verdict(clean, 0.59, probe) == clean
    text_loop = LoopVerdict(looping=True, kind="verbatim", decided_by="periodic-tail", score=0.9)
    assert combined_verdict(text_loop, 0.1, probe) == text_loop
    assert combined_verdict(text_loop, 0.99, probe) == text_loop


def test_the_shipped_probe_carries_its_provenance():
    probe = load_probe()
    assert probe.scorer == "loopfix:smollm2" and probe.max_tokens == 512
    assert len(probe.weights) == 576 * len(probe.layers)
    assert 0 < probe.threshold < 1
    provenance = probe.provenance
    assert re.fullmatch("[0-9a-f]{40}", provenance.corpus_commit)
    assert provenance.corpus == "data/detect_corpus_real/corpus.jsonl"
    assert "tune" in provenance.split_rule and "precision" in provenance.threshold_rule
    assert {"auc", "precision_or", "semantic_recall_or"} <= set(provenance.tune_metrics)
    assert SHIPPED_PROBE.stat().st_size < 64 * 1024
