import pydantic
import pytest

from loopfix.detect import DetectConfig


def test_every_field_is_described():
    for name, field in DetectConfig.model_fields.items():
        assert field.description, name


def test_frozen_and_strict():
    config = DetectConfig()
    with pytest.raises(pydantic.ValidationError):
        config.min_repeats = 5  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        DetectConfig(min_repeat=3)  # type: ignore[call-arg]


def test_documented_defaults():
    config = DetectConfig()
    assert config.max_period == 512
    assert (config.ngram_n, config.ngram_k) == (30, 20)
    assert (config.entropy_threshold, config.entropy_streak) == (0.3, 3)


@pytest.mark.parametrize("field", ["min_repeats", "segment_min_repeats", "semantic_min_repeats"])
def test_a_loop_needs_at_least_two_copies(field):
    with pytest.raises(pydantic.ValidationError):
        DetectConfig(**{field: 1})
