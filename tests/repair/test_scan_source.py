"""The scan source's pairs from the records of real scans: a tiny random llama loops at greedy."""

from dataclasses import replace
from pathlib import Path

import pytest

from loopfix.detect import detect_text
from loopfix.models import load_model
from loopfix.records import Sample
from loopfix.repair import RepairConfig, RepairInputError
from loopfix.repair.sources.description import PairCounts
from loopfix.repair.sources.loops import MIN_BRANCH_TOKENS, loop_location
from loopfix.repair.sources.records import PairRequest, normal_texts, split_prompts
from loopfix.repair.sources.scan import ScanSource
from loopfix.repair.sources.scan_records import ScanRecords, read_records
from loopfix.scan import ScanConfig, run_scan
from loopfix.scan.detection import scan_detect_config

CAP = 40
GENERATION = RepairConfig(gen_batch_size=8)


@pytest.fixture(scope="module")
def scanned(tiny_folder: Path) -> Path:
    """Greedy loops and T=1 samples that do not loop, 12 arith prompts."""
    out = tiny_folder.parent / "scan"
    config = ScanConfig(
        model=str(tiny_folder),
        suite="arith",
        n=12,
        temperatures=[0.0, 1.0],
        max_new_tokens=CAP,
        out=out,
    )
    run_scan(config)
    return out / "records.jsonl"


def test_pairs_cut_each_loop_at_its_first_repeat(tiny_folder: Path, scanned: Path) -> None:
    model, tokenizer = load_model(str(tiny_folder), device="cpu")
    records = read_records(scanned, "arith", str(tiny_folder), tokenizer)
    eos = tokenizer.eos_token_id
    checked = 0
    for prompt_id in records.items:
        greedy = next(
            s
            for s in records.samples
            if s.prompt_id == prompt_id and s.settings["temperature"] == 0
        )
        pairs, counts = ScanSource().pairs(
            model, tokenizer, PairRequest(records, [prompt_id], 3, 10, 1), GENERATION
        )
        assert counts.looping_samples >= 1  # the greedy sample loops
        location = loop_location(greedy, tokenizer)
        assert location is not None
        onset, period = location
        point = onset + period
        pair = pairs[0]  # the greedy sample is stored first
        assert pair.prefix == records.prompts[prompt_id] + greedy.tokens[:point]
        assert pair.repetitive == greedy.tokens[point : point + len(pair.repetitive)]
        assert len(pair.repetitive) == min(CAP - point, max(3 * period, MIN_BRANCH_TOKENS))
        assert pair.skip == period and len(pair.repetitive) >= 2 * period
        # Matched on termination: equally long, no EOS, and only the productive one does not loop.
        assert len(pair.productive) == len(pair.repetitive)
        assert eos not in pair.productive and eos not in pair.repetitive
        assert pair.productive[0] != pair.repetitive[0]
        config = scan_detect_config(len(pair.productive)).model_copy(update={"ngram": False})
        for branch, loops in ((pair.repetitive, True), (pair.productive, False)):
            text = tokenizer.decode(greedy.tokens[:point] + branch, skip_special_tokens=True)
            assert detect_text(text, tokenizer, config).looping == loops
        checked += 1
    assert checked == 12


def _crafted(tokenizer: object, words: list[str], finish: str = "length") -> Sample:
    """A record as the scan writes it, judged by the scan's own detector."""
    tokens = [tokenizer.convert_tokens_to_ids(w) for w in words]  # type: ignore[attr-defined]
    text = tokenizer.decode(tokens, skip_special_tokens=True)  # type: ignore[attr-defined]
    verdict = detect_text(text, tokenizer, scan_detect_config(48))
    return Sample("p", 0, {"temperature": 0.0}, tokens, text, finish, verdict)  # type: ignore[arg-type]


def test_onset_is_located_in_the_generated_tokens(tiny_folder: Path) -> None:
    model, tokenizer = load_model(str(tiny_folder), device="cpu")
    # "<unk>" decodes to nothing: the detector's positions (in the re-tokenized text) are one
    # short of the generated ones, and the loop must be found where it was generated.
    # Cut at the cap: a repeat the model ends by itself is no loop (docs/metrics.md).
    words = ["h", "e", "<unk>", *["x", "y", "z"] * 10]
    sample = _crafted(tokenizer, words)
    assert sample.loop is not None and (sample.loop.onset, sample.loop.period) == (2, 3)
    assert loop_location(sample, tokenizer) == (3, 3)
    records = ScanRecords(
        Path("records.jsonl"), ScanConfig(model="m"), [sample], {}, {"p": [5, 6, 7]}
    )
    pairs, counts = ScanSource().pairs(
        model, tokenizer, PairRequest(records, ["p"], 3, 4, 0), GENERATION
    )
    assert counts == PairCounts(1, 1, {"no_non_looping_resample": 0})
    (pair,) = pairs
    # Prefix: prompt + the unit stated once; branch: the next 16 generated tokens (no EOS).
    assert pair.prefix == [5, 6, 7, *sample.tokens[:6]]
    assert pair.repetitive == sample.tokens[6:22] and pair.skip == 3
    # A record whose text is not its decoded tokens (a server that rewrote it) cannot be cut.
    rewritten = replace(sample, text="reasoning\n</think>\n\n" + sample.text)
    assert loop_location(rewritten, tokenizer) is None
    records = replace(records, samples=[rewritten])
    _, counts = ScanSource().pairs(
        model, tokenizer, PairRequest(records, ["p"], 3, 4, 0), GENERATION
    )
    assert counts.pairs == 0 and counts.dropped["loop_not_located"] == 1


def test_training_and_held_out_prompts_never_meet(tiny_folder: Path, scanned: Path) -> None:
    _, tokenizer = load_model(str(tiny_folder), device="cpu")
    records = read_records(scanned, None, str(tiny_folder), tokenizer)
    ids = list(records.items)
    roles = split_prompts(ids, 31337)
    assert roles == split_prompts(list(reversed(ids)), 31337)  # by id, not by order
    assert sorted(sum(roles.values(), [])) == sorted(ids)
    assert len(roles["train"]) == 6 and len(roles["causal"]) == len(roles["verify"]) == 3
    train, held_out = set(roles["train"]), set(roles["causal"] + roles["verify"])
    assert not train & held_out and not set(roles["causal"]) & set(roles["verify"])
    # Normal text: only samples of the prompts asked for, and none of them loops.
    normal = normal_texts(records, sorted(held_out), 100)
    kept = [s for s in records.samples if s.prompt_id in held_out and not s.looping]
    assert len(normal) == len(kept) > 0
    assert all(ids[:start] in [records.prompts[p] for p in held_out] for ids, start in normal)
    with pytest.raises(RepairInputError, match="at least 4"):
        split_prompts(ids[:3], 0)


def test_records_of_another_suite_or_model_are_refused(
    tiny_folder: Path, scanned: Path, tmp_path: Path
) -> None:
    _, tokenizer = load_model(str(tiny_folder), device="cpu")
    with pytest.raises(RepairInputError, match="suite 'arith', not 'stargraph'"):
        read_records(scanned, "stargraph", str(tiny_folder), tokenizer)
    with pytest.raises(RepairInputError, match="generated by"):
        read_records(scanned, "arith", "loopfix:stargraph", tokenizer)
    lonely = tmp_path / "records.jsonl"
    lonely.write_bytes(scanned.read_bytes())
    with pytest.raises(RepairInputError, match="scan.json is missing"):
        read_records(lonely, "arith", str(tiny_folder), tokenizer)


def test_records_of_other_seeds_merge_and_other_settings_are_refused(
    tiny_folder: Path, scanned: Path, tmp_path: Path
) -> None:
    _, tokenizer = load_model(str(tiny_folder), device="cpu")
    runs = {}
    for name, seed, cap in (("seed", 7, CAP), ("cap", 8, CAP // 2)):
        config = ScanConfig(
            model=str(tiny_folder),
            suite="arith",
            n=4,
            seed=seed,
            temperatures=[0.0, 1.0],
            max_new_tokens=cap,
            out=tmp_path / name,
        )
        run_scan(config)
        runs[name] = config.out / "records.jsonl"
    alone = read_records(scanned, "arith", str(tiny_folder), tokenizer)
    merged = read_records(scanned, "arith", str(tiny_folder), tokenizer, [runs["seed"]])
    assert len(merged.items) == len(alone.items) + 4 and set(alone.items) < set(merged.items)
    assert len(merged.samples) == len(alone.samples) + 8 and merged.config == alone.config
    assert all(merged.prompts[i] == alone.prompts[i] for i in alone.items)
    with pytest.raises(RepairInputError, match="other max_new_tokens than"):
        read_records(scanned, "arith", str(tiny_folder), tokenizer, [runs["cap"]])
    with pytest.raises(RepairInputError, match="repeats 12 prompts of"):
        read_records(scanned, "arith", str(tiny_folder), tokenizer, [scanned])
