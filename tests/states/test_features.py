"""The hidden-state tier on the real scorer (SmolLM2-135M-Instruct): features, the shipped
probe's probability, and `loopfix detect --states` end to end."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.models import load_model
from loopfix.states import load_probe
from loopfix.states.features import layer_features, pooled_states

# A few seconds each once the GGUF is converted; the first use in a clean checkout converts it.
pytestmark = pytest.mark.slow

TEXTS = (
    "Wait, let me check again. 12 times 13 is 156, so the answer is 156. "
    "Let me verify: 12 times 13 is 156. So the answer is 156. Wait, let me check again.",
    "The three primary colours of light are red, green and blue.",
)


@pytest.fixture(scope="module")
def scorer():
    return load_model("loopfix:smollm2", device="cpu")


def test_features_and_probability(scorer):
    model, tokenizer = scorer
    pooled = pooled_states(model, tokenizer, TEXTS)
    layers = model.config.num_hidden_layers + 1
    assert pooled.shape == (2, layers, model.config.hidden_size)
    # padded in a batch or run alone, a text's states are the same
    alone = pooled_states(model, tokenizer, TEXTS[1:], batch_size=1)
    np.testing.assert_allclose(alone[0], pooled[1], rtol=1e-5, atol=1e-4)
    probe = load_probe()
    features = layer_features(pooled, probe.layers)
    assert features.shape == (2, len(probe.weights))
    probabilities = probe.probability(features)
    assert np.all((probabilities >= 0) & (probabilities <= 1))


def test_detect_states_end_to_end(tmp_path):
    data = tmp_path / "outputs.jsonl"
    looping = "The answer is 7.\n" + "Wait, 3 + 4 = 7, so the answer is 7 again.\n" * 20
    rows = [{"id": "clean", "text": TEXTS[1]}, {"id": "loop", "text": looping}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(app, ["detect", str(data), "--states", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "probe" in result.output
    verdicts = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert all(0 <= row["probe"] <= 1 for row in verdicts.values())
    assert verdicts["loop"]["looping"] and verdicts["loop"]["decided_by"] != "states"
    probe = load_probe()
    clean = verdicts["clean"]
    assert clean["looping"] == probe.fires(clean["probe"])
    assert clean["decided_by"] == ("states" if clean["looping"] else None)
