import json

import pytest
from pydantic import TypeAdapter

from loopfix.detect import NOT_LOOPING, LoopVerdict, Span

# As a records.jsonl line reads it back (`records.read_samples`).
from_dict = TypeAdapter(LoopVerdict).validate_python


def test_round_trip_through_json():
    verdict = LoopVerdict(
        looping=True,
        kind="near",
        onset=10,
        period=7,
        repeats=4,
        span=Span(10, 40, 55, 210),
        evidence="Step 3: check\n",
        entropy_streak_onset=12,
        flywheel=True,
        top1_trend=(0.5, 0.9, 0.99),
    )
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data["span"] == {"start": 10, "end": 40, "char_start": 55, "char_end": 210}
    assert from_dict(data) == verdict


def test_negative_verdict():
    assert LoopVerdict.not_looping() == NOT_LOOPING
    assert not NOT_LOOPING.looping
    assert NOT_LOOPING.kind is None and NOT_LOOPING.onset is None
    assert from_dict(NOT_LOOPING.to_dict()) == NOT_LOOPING


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="kind"):
        from_dict({"looping": True, "kind": "bogus"})
