import torch
from transformers import RepetitionPenaltyLogitsProcessor

from loopfix.guards import GuardContext, parse_guards


def run(spec: str, args: dict, prompt: list[int], output: list[int], logits: torch.Tensor):
    chain = parse_guards(spec, args, GuardContext(vocab_size=logits.shape[1]))
    chain.add(0, prompt, output)
    return chain.apply(logits.clone())


def test_repetition_penalty_divides_positive_and_multiplies_negative(logits) -> None:
    # Seen: 0 (2.0) and 1 (-1.0) in the prompt, 3 (3.0) in the output.
    result = run("penalty", {"penalty.repetition": 2.0, "penalty.presence": 0}, [0, 1], [3], logits)
    expected = torch.tensor([[1.0, -2.0, 0.5, 1.5, -2.0, 1.0, 0.0, -0.5]])
    assert torch.equal(result, expected)


def test_presence_and_frequency_count_the_output_only(logits) -> None:
    # Token 5 twice in the output, token 2 once; token 0 only in the prompt is not penalised.
    args = {"penalty.presence": 0.5, "penalty.frequency": 0.25}
    result = run("penalty", args, [0], [5, 2, 5], logits)
    expected = logits.clone()
    expected[0, 5] = 1.0 - 0.5 - 0.5
    expected[0, 2] = 0.5 - 0.5 - 0.25
    assert torch.equal(result, expected)


def test_penalties_equal_hf_and_the_openai_formula() -> None:
    torch.manual_seed(0)
    scores = torch.randn(1, 50)
    ids = torch.tensor([[3, 7, 7, 9, 12, 3, 40, 40, 40]])
    prompt_width = 4
    args = {"penalty.repetition": 1.3, "penalty.presence": 0.4, "penalty.frequency": 0.2}
    ours = run(
        "penalty", args, ids[0, :prompt_width].tolist(), ids[0, prompt_width:].tolist(), scores
    )
    hf = RepetitionPenaltyLogitsProcessor(1.3)(ids, scores.clone())
    # OpenAI: over generated tokens only (12, 3, 40 x3): logit -= 0.4 [count > 0] + 0.2 count.
    for token, count in {12: 1, 3: 1, 40: 3}.items():
        hf[0, token] -= 0.4 + 0.2 * count
    assert torch.allclose(ours, hf)


def test_dynamic_penalty_grows_with_length_and_is_capped(logits) -> None:
    args = {"dynamic-penalty.base": 1.2, "dynamic-penalty.scale": 10, "dynamic-penalty.cap": 1.5}
    # 10 generated tokens: factor 1.2 ** 1 = 1.2 on the seen tokens 3 and 1.
    result = run("dynamic-penalty", args, [1], [3] * 10, logits)
    expected = logits.clone()
    expected[0, 3] = 3.0 / 1.2
    expected[0, 1] = -1.0 * 1.2
    assert torch.allclose(result, expected, rtol=0, atol=1e-6)
    # 1000 generated tokens: 1.2 ** 100 would be 8e7; the cap holds it at 1.5.
    result = run("dynamic-penalty", args, [1], [3] * 1000, logits)
    assert result[0, 3] == torch.tensor(3.0) / 1.5
    assert result[0, 1] == torch.tensor(-1.0) * 1.5
