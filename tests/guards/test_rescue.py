import math

import torch

from loopfix.detect import DetectConfig, find_periodic_tail
from loopfix.guards import GuardContext, parse_guards
from loopfix.models import tiny_model
from loopfix.records import DecodeSettings
from tests.decoding import plain_greedy

WATCH = {"rescue.min_span": 8, "rescue.max_period": 16, "rescue.at": "onset"}
# Output: 1 2 3, then "4 5" repeated. The period-2 run covers 8 tokens at length 11: onset 3.
STREAM = [1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5]


def feed(chain, tokens: list[int]) -> dict[int, int]:
    for token in tokens:
        chain.extend(0, [token])
        pending = chain.pending_rollbacks()
        if pending:
            return pending
    return {}


def test_a_loop_rolls_back_to_its_onset_and_bans_the_token_there() -> None:
    chain = parse_guards("rescue", WATCH, GuardContext(8))
    chain.add(0, [0])
    assert feed(chain, STREAM) == {0: 3}
    chain.rollback(0, 3)
    row = chain.guards[0].rows[0]
    assert row.output == [1, 2, 3]
    banned = chain.apply(torch.zeros(1, 8))
    assert banned[0, 4] == -math.inf and torch.isfinite(banned).sum() == 7
    assert chain.record(0)["rescues"] == [
        {"detected_at": 11, "position": 3, "period": 2, "token": 4}
    ]
    chain.extend(0, [6])  # the escape; the ban applies at position 3 only
    assert torch.equal(chain.apply(torch.zeros(1, 8)), torch.zeros(1, 8))


def test_repeat_mode_keeps_one_statement_of_the_unit() -> None:
    chain = parse_guards("rescue", {**WATCH, "rescue.at": "repeat"}, GuardContext(8))
    chain.add(0, [0])
    assert feed(chain, STREAM) == {0: 5}


def test_the_budget_limits_rescues_per_sequence() -> None:
    chain = parse_guards("rescue", {**WATCH, "rescue.budget": 1}, GuardContext(8))
    chain.add(0, [0])
    feed(chain, STREAM)
    chain.rollback(0, 3)
    assert feed(chain, [6, 7, 6, 7, 6, 7, 6, 7, 6, 7]) == {}
    assert len(chain.record(0)["rescues"]) == 1


def test_without_rollback_the_continuing_token_is_banned_at_detection() -> None:
    chain = parse_guards("rescue", WATCH, GuardContext(8), rollback=False)
    chain.add(0, [0])
    assert feed(chain, STREAM) == {}
    logits = chain.apply(torch.zeros(1, 8))
    assert logits[0, 4] == -math.inf  # "4" would continue "... 4 5 | 4"
    assert chain.record(0)["rescues"][0]["position"] == 11


def test_rescue_on_a_model_rolls_back_sequence_and_cache_to_the_onset(decode) -> None:
    model = tiny_model("llama", seed=0)
    prompt = [1, 5, 6, 7]  # greedy loops on "42 114 37" from token 17 on
    settings = DecodeSettings(max_new_tokens=40)
    plain = decode(model, [prompt], settings)[0]
    rescued = decode(model, [prompt], settings, "rescue", {**WATCH, "rescue.budget": 1})[0]
    (rescue,) = rescued.guards["rescues"]
    # The detector, run offline on the plain output, puts the onset where the rescue went.
    config = DetectConfig(min_span=8, max_period=16)
    verdict = find_periodic_tail(plain.tokens[: rescue["detected_at"]], config)
    assert verdict is not None and rescue["position"] == verdict.onset
    assert find_periodic_tail(plain.tokens[: rescue["detected_at"] - 1], config) is None
    position, banned = rescue["position"], rescue["token"]
    assert plain.tokens[position] == banned
    assert rescued.tokens[:position] == plain.tokens[:position]
    # The token chosen at the onset is the argmax without the banned token (fresh forward pass),
    ids = torch.tensor([prompt + plain.tokens[:position]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    logits[banned] = -math.inf
    assert rescued.tokens[position] == int(logits.argmax())
    # and the rest equals greedy decoding from that prefix: the rollback was exact.
    prefix = prompt + rescued.tokens[: position + 1]
    rest = len(rescued.tokens) - position - 1
    assert plain_greedy(model, prefix, rest) == rescued.tokens[position + 1 :]


def test_cut_ends_the_sequence_at_detection(decode) -> None:
    model = tiny_model("llama", seed=0)
    settings = DecodeSettings(max_new_tokens=40)
    args = {"cut.min_span": 8, "cut.max_period": 16}
    result = decode(model, [[1, 5, 6, 7]], settings, "cut", args)
    assert result[0].finish_reason == "repetition"
    assert len(result[0].tokens) == result[0].guards["cut"]["position"]
    config = DetectConfig(min_span=8, max_period=16)
    assert find_periodic_tail(result[0].tokens, config) is not None
    assert find_periodic_tail(result[0].tokens[:-1], config) is None


def test_uncertain_mode_branches_where_the_first_copy_was_least_sure() -> None:
    chain = parse_guards("rescue", {**WATCH, "rescue.at": "uncertain"}, GuardContext(8))
    chain.add(0, [0])
    pending: dict[int, int] = {}
    for position, token in enumerate(STREAM):
        logits = torch.zeros(1, 8)
        # Sure of every token but the "5" at position 4, inside the loop's first copy [3, 5).
        logits[0, token] = 1.0 if position == 4 else 5.0
        chain.apply(logits)
        chain.extend(0, [token])
        pending = chain.pending_rollbacks()
    assert pending == {0: 4}
    assert chain.record(0)["rescues"][0]["token"] == 5
