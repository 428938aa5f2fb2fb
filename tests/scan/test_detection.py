"""How the scan judges a record: the cut at the token limit reaches the detector."""

from loopfix.scan.detection import judge_loop, scan_detect_config

TEMPLATED = "".join(f"- 2 boxes have 2 * {48 * 2**i} = {96 * 2**i} pencils.\n" for i in range(9))


def test_finish_reason_length_lets_a_templated_tail_decide():
    config = scan_detect_config(384)
    cut = judge_loop([], TEMPLATED, None, config, finish_reason="length")
    assert cut.looping and cut.decided_by == "near+cut"
    for reason in ("stop", None):
        assert not judge_loop([], TEMPLATED, None, config, finish_reason=reason).looping
