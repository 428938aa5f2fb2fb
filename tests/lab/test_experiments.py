"""`loopfix lab experiment`: every experiment end to end at a tiny size (real training and the
testbed's real evaluation), resuming and refusing another plan, the star-graph and training
pieces the experiments add, and the statistics on inputs with known answers."""

import json
import math
import random
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch
from transformers import LlamaForCausalLM
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.detect import detect_text
from loopfix.detect.clean import cut_text
from loopfix.experiments import (
    ALL,
    EXPERIMENTS,
    ExperimentConfig,
    ExperimentError,
    every_experiment,
    run_experiment,
    run_experiments,
)
from loopfix.experiments.run import run_folder
from loopfix.experiments.summary import PER_MODEL, PER_TEMPERATURE, ExperimentSummary
from loopfix.lab.attention import recent_bias, use_attention_decay
from loopfix.lab.config import TrainConfig
from loopfix.lab.curriculum import loss_mask, repeated_excursions, stage_at
from loopfix.lab.deloop import deloop_walk
from loopfix.lab.hints import (
    POSITION_KINDS,
    hint_span,
    insert_hints,
    position_kinds,
    strip_hints,
)
from loopfix.lab.memory import add_visited_memory, use_visited_memory, visited_marks
from loopfix.lab.multistep import MultiStepHeads, ahead_targets
from loopfix.lab.stargraph import (
    BACK_ID,
    EOS_ID,
    NODE_NAMES,
    VOCABULARY,
    StarGraph,
    arm_choices,
    make_graph,
    prompt_length,
    render,
    score_walk,
    teacher_walk,
)
from loopfix.lab.train import build_model, loss_by_kind, make_batch, visited_mass
from loopfix.scan.stats import mean_interval, paired_t_test, student_t_two_sided_p
from loopfix.suites.checkers import scored_walk

runner = CliRunner()
TINY = {"seeds": 2, "steps": 2, "n": 3}


def tiny_run(name: str, out: Path, lines: list[str] | None = None, **settings: object) -> dict:
    config = ExperimentConfig(name=name, **{**TINY, **settings})
    run_experiment(config, out, (lines if lines is not None else []).append)
    return json.loads((out / "experiment.json").read_text())


def run_records(out: Path) -> dict[str, list[dict]]:
    return {
        path.parent.parent.name + "/" + path.parent.name: json.loads(path.read_text())
        for path in sorted(out.glob("runs/*/seed-*/result.json"))
    }


def setting_at(run: Path, temperature: float) -> dict:
    """One temperature's row of a run's evaluation, as result.json holds it."""
    settings = json.loads((run / "result.json").read_text())["evaluation"]["settings"]
    return next(s for s in settings if s["temperature"] == temperature)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_each_experiment_runs_end_to_end_and_writes_its_outputs(name: str, tmp_path: Path) -> None:
    result = tiny_run(name, tmp_path)
    arms = list(json.loads((tmp_path / "plan.json").read_text())["arms"])
    assert result["arms"] == arms and len(arms) >= 2 and result["seeds"] == 2
    temperatures = [0.0, 0.6, 1.0]
    assert len(result["cells"]) == len(arms) * (
        len(PER_TEMPERATURE) * len(temperatures) + len(PER_MODEL)
    )
    baseline = {
        (c["metric"], c["temperature"]): c["values"] for c in result["cells"] if c["arm"] == arms[0]
    }
    for cell in result["cells"]:
        assert len(cell["values"]) == 2
        # a rate with no denominator (no walk backtracked: no consecutive root decisions) is None
        reference = baseline[cell["metric"], cell["temperature"]]
        paired = any(None not in pair for pair in zip(cell["values"], reference, strict=True))
        assert (cell["versus_baseline"] is not None) == (cell["arm"] != arms[0] and paired)
    records = run_records(tmp_path)
    assert len(records) == 2 * len(arms)
    # the illegal-move column is each run's own count of walks that ended on an illegal move
    for cell in result["cells"]:
        if cell["metric"] == "illegal_rate":
            folders = [run_folder(tmp_path, cell["arm"], seed) for seed in (0, 1)]
            settings = [setting_at(folder, cell["temperature"]) for folder in folders]
            assert cell["values"] == [s["outcomes"]["illegal"] / s["n"] for s in settings]
    table = (tmp_path / "table.md").read_text()
    assert all(f"| {arm}" in table for arm in arms) and "## T = 0.6" in table
    assert "| illegal move |" in table
    svg = ElementTree.fromstring((tmp_path / "plot.svg").read_text())
    assert svg.tag.endswith("svg") and len(list(svg)) == 2  # loop rate and consecutive repeat


def test_arms_share_the_data_stream_and_differ_in_what_the_claim_names(tmp_path: Path) -> None:
    tiny_run("batch", tmp_path / "batch", steps=4)
    records = run_records(tmp_path / "batch")
    # the same walks grouped into batches of 16 ... 256: the same tokens, 4 x 64 walks each
    for seed in (0, 1):
        runs = [record["training"] for key, record in records.items() if key.endswith(f"-{seed}")]
        assert len({run["train_tokens"] for run in runs}) == 1
        assert {run["config"]["batch_size"] * run["config"]["steps"] for run in runs} == {256}
    tiny_run("loop-data", tmp_path / "loop")
    shares = {
        key: record["training"]["config"]["loop_fraction"]
        for key, record in run_records(tmp_path / "loop").items()
    }
    assert shares["0_/seed-0"] == 0 and shares["2_/seed-1"] == 0.02


def test_a_rerun_resumes_and_another_plan_is_refused(tmp_path: Path) -> None:
    first = tiny_run("margin", tmp_path)
    lines: list[str] = []
    assert tiny_run("margin", tmp_path, lines) == first
    assert sum("done before, kept" in line for line in lines) == 4
    with pytest.raises(ExperimentError, match="another experiment plan"):
        run_experiment(ExperimentConfig(name="margin", seeds=2, steps=3, n=3), tmp_path)
    record = run_folder(tmp_path, "margin 1", 1) / "result.json"
    record.write_text('{"junk": 1}')
    with pytest.raises(ExperimentError, match=f"{re.escape(str(record))} lacks 'training'"):
        tiny_run("margin", tmp_path)
    (tmp_path / "plan.json").write_text("not json")
    with pytest.raises(ExperimentError, match=r"plan.json: its text: Invalid JSON.*new --out"):
        tiny_run("margin", tmp_path)


def test_the_cli_lists_the_experiments_and_names_the_valid_ones_on_a_bad_name() -> None:
    listed = runner.invoke(app, ["lab", "experiment", "--list"])
    assert listed.exit_code == 0 and all(name in listed.output for name in EXPERIMENTS)
    bad = runner.invoke(app, ["lab", "experiment", "nope"])
    assert bad.exit_code == 2 and "loop-data, margin" in bad.output
    few = runner.invoke(app, ["lab", "experiment", "margin", "--seeds", "1"])
    assert few.exit_code == 2 and "--seeds" in few.output
    for graph in ("0,3", "8,8"):
        big = runner.invoke(app, ["lab", "experiment", "margin", "--graph", graph])
        assert big.exit_code == 2 and f"G({graph})" in big.output, big.output
        assert "Traceback" not in big.output


def test_the_cli_runs_an_experiment_into_out(tmp_path: Path) -> None:
    args = ["lab", "experiment", "margin", "--out", str(tmp_path), "--temperatures", "0"]
    result = runner.invoke(app, [*args, "--seeds", "2", "--steps", "1", "--n", "2"])
    assert result.exit_code == 0, result.output
    assert "## T = 0" in result.output and (tmp_path / "plot.svg").is_file()


def test_the_cli_runs_all_into_one_folder_per_experiment_and_one_table(tmp_path: Path) -> None:
    args = ["lab", "experiment", "all", "--out", str(tmp_path), "--temperatures", "0"]
    result = runner.invoke(app, [*args, "--seeds", "2", "--steps", "1", "--n", "2", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    table = (tmp_path / "table.md").read_text()
    for name in EXPERIMENTS:
        assert (tmp_path / name / "plot.svg").is_file()
        assert (tmp_path / name / "table.md").read_text() in table
    assert f"({len(EXPERIMENTS)} experiments)" in result.output
    trained = {
        json.dumps(json.loads(path.read_text())["training"]["config"], sort_keys=True)
        for path in tmp_path.glob("*/runs/*/seed-*/result.json")
    }
    assert table.startswith(f"Training: {len(trained)} distinct models, ")


def test_two_jobs_at_once_give_what_one_gives(tmp_path: Path) -> None:
    # Each (arm, seed) trains in its own spawned process: same seeds, same data stream, so the
    # same models and numbers as one after the other.
    config = ExperimentConfig(name="margin", **TINY)
    one = run_experiment(config, tmp_path / "one", [].append)
    two = run_experiment(config, tmp_path / "two", [].append, jobs=2)

    def numbers(summary: ExperimentSummary) -> list[object]:  # every cell but the wall time
        return [c for c in summary.to_dict()["cells"] if c["metric"] != "train_seconds"]

    assert numbers(two) == numbers(one)
    assert run_records(tmp_path / "two").keys() == run_records(tmp_path / "one").keys()


def test_experiments_run_together_train_each_distinct_model_once(tmp_path: Path) -> None:
    # margin's and loop-data's baselines are the same recipe: trained once per seed, copied once
    lines: list[str] = []
    margin, _ = run_experiments(
        [
            (ExperimentConfig(name="margin", **TINY), tmp_path / "margin"),
            (ExperimentConfig(name="loop-data", **TINY), tmp_path / "loop-data"),
        ],
        lines.append,
    )
    assert sum("copied from it" in line for line in lines) == 2
    assert sum("training 2 steps" in line for line in lines) == 2 * (2 + 4 - 1)
    # one experiment after the other, each summarised once its runs are there
    margin_written = lines.index(
        f"wrote {tmp_path / 'margin' / 'experiment.json'}, "
        f"{tmp_path / 'margin' / 'table.md'}, {tmp_path / 'margin' / 'plot.svg'}"
    )
    first_loop_data = next(
        i for i, line in enumerate(lines) if "loop-data" in line and ": step " in line
    )
    assert margin_written < first_loop_data
    kept = run_records(tmp_path / "margin")
    copied = run_records(tmp_path / "loop-data")
    for seed in (0, 1):
        assert copied[f"0_/seed-{seed}"] == kept[f"no_margin/seed-{seed}"]
    alone = run_experiment(ExperimentConfig(name="margin", **TINY), tmp_path / "alone", [].append)
    assert [c for c in alone.cells if c.metric != "train_seconds"] == [
        c for c in margin.cells if c.metric != "train_seconds"
    ]
    assert (tmp_path / "loop-data" / "runs" / "0_" / "seed-1" / "model" / "config.json").is_file()


def test_all_is_every_experiment_on_the_graph_given() -> None:
    for graph in ([3, 3], [5, 5]):
        runs = every_experiment(ExperimentConfig(name=ALL, seeds=3, steps=5, graph=graph))
        assert list(runs) == list(EXPERIMENTS)
        assert all(r.name == name and r.graph == graph for name, r in runs.items())
        assert all(r.steps == 5 and r.seeds == 3 for r in runs.values())


GRAPH = StarGraph(root=0, arms=((1, 2), (3, 4), (5, 6)), edges=(), target_arm=2)


def test_arm_choices_reads_every_root_decision() -> None:
    walk = [0, 1, BACK_ID, 0, 1, 2, BACK_ID, 0, 3, BACK_ID, 0, 5, 6, EOS_ID]
    assert arm_choices(GRAPH, walk) == [0, 0, 1, 2]
    assert arm_choices(GRAPH, [0, 5, 6, EOS_ID]) == [2]
    assert arm_choices(GRAPH, [0, BACK_ID, 0, EOS_ID]) == [-1]  # an illegal move, still a choice
    assert arm_choices(GRAPH, [4, 5]) == []  # never at the root


def test_the_margin_penalty_is_the_mass_on_visited_nodes_other_than_the_target() -> None:
    # prompt token 99 (not a walk token), then the walk 0 1 back 0 3
    ids = torch.tensor([[len(NODE_NAMES) + 1, 0, 1, BACK_ID, 0, 3]])
    labels = ids.clone()
    labels[0, 0] = -100
    logits = torch.zeros(1, 6, len(VOCABULARY))  # uniform: each token 1/V
    # predictions of 0 (nothing visited yet), 1 (visited {0}), back ({0, 1}), 0 ({0, 1}, the
    # target 0 not counted), 3 ({0, 1}): 0 + 1 + 2 + 1 + 2 visited non-target nodes over 5
    expected = (0 + 1 + 2 + 1 + 2) / len(VOCABULARY)  # summed over the 5 predictions
    assert visited_mass(logits, ids, labels).item() == pytest.approx(expected)


def test_the_interval_and_the_paired_test_on_known_answers() -> None:
    interval = mean_interval([1.0, 2.0, 3.0])
    half = 4.302652729749464 / math.sqrt(3)  # t(0.975, 2) x sd 1 / sqrt(3)
    assert interval.mean == 2.0 and interval.low == pytest.approx(2 - half, abs=1e-9)
    assert interval.high == pytest.approx(2 + half, abs=1e-9)
    assert mean_interval([0.5]).low is None
    # differences 1, 2, 3: t = 2 / (1 / sqrt 3) = 3.4641 on 2 df; scipy's ttest_rel: 0.0741799
    test = paired_t_test([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert test.difference.mean == 2.0 and test.p == pytest.approx(0.0741799, abs=1e-6)
    assert paired_t_test([1.0, 2.0], [1.0, 2.0]).p == 1.0  # no difference at all
    assert paired_t_test([2.0, 3.0], [1.0, 2.0]).p == 0.0  # the same difference every seed
    # closed forms: df 1 is Cauchy, P(|T| >= 1) = 1/2; df 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2)
    assert student_t_two_sided_p(1.0, 1) == pytest.approx(0.5, abs=1e-12)
    assert student_t_two_sided_p(1.0, 2) == pytest.approx(1 - 1 / math.sqrt(3), abs=1e-12)
    assert student_t_two_sided_p(0.0, 5) == 1.0


def test_a_plan_written_before_a_training_field_existed_still_resumes(tmp_path: Path) -> None:
    first = tiny_run("curriculum", tmp_path)
    plan = json.loads((tmp_path / "plan.json").read_text())
    for arm in plan["arms"].values():
        del arm["attention_decay_steps"]  # as an older loopfix wrote it
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    assert tiny_run("curriculum", tmp_path) == first


def test_the_curriculum_stages_split_the_steps_and_mask_repeated_excursions() -> None:
    config = TrainConfig(steps=9, curriculum_strict=1 / 3, curriculum_relaxed=1 / 3)
    assert [stage_at(config, step) for step in range(9)] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert {stage_at(TrainConfig(steps=9), step) for step in range(9)} == {3}
    with pytest.raises(ValueError, match="at most 1"):
        TrainConfig(curriculum_strict=0.6, curriculum_relaxed=0.5)
    # root 0; arm 1 2, arm 1 again (a repeat, through its `back 0`), arm 3, then the target 5 6
    walk = [0, 1, BACK_ID, 0, 1, 2, BACK_ID, 0, 3, BACK_ID, 0, 5, 6, EOS_ID]
    repeated = [False] * 4 + [True] * 4 + [False] * 6
    assert repeated_excursions(walk) == repeated
    assert loss_mask(walk, 3) == [True] * 14
    assert loss_mask(walk, 2) == [not r for r in repeated]
    assert loss_mask(walk, 1) == [False] * 14  # a walk with a repeat carries no loss at all
    assert loss_mask([0, 1, BACK_ID, 0, 5, 6, EOS_ID], 1) == [True] * 7
    # a looping walk (no EOS, cut mid-excursion) marks every repeat after the first entry
    assert repeated_excursions([0, 1, BACK_ID, 0, 1, BACK_ID, 0, 1]) == [False] * 4 + [True] * 4


def test_a_curriculum_batch_carries_loss_only_where_the_stage_allows() -> None:
    config = TrainConfig(batch_size=32, loop_fraction=0.0)
    full, strict = (make_batch(random.Random(4), config, 0, stage=s) for s in (3, 1))
    assert torch.equal(full.ids, strict.ids)  # the same walks, only the loss differs
    dropped = (strict.labels == -100).all(1) & ~(full.labels == -100).all(1)
    assert 0 < int(dropped.sum()) < 32  # some walks re-enter an arm, others never do
    kept = ~dropped
    assert torch.equal(full.labels[kept], strict.labels[kept])


def test_the_deloop_step_is_loopfix_clean_on_the_rendered_walk() -> None:
    # a walk that repeats the excursion `1 2 back 0` verbatim to 48 tokens, as a looping teacher
    walk = [0, 3, BACK_ID, 0] + [1, 2, BACK_ID, 0] * 11
    text = render(walk)
    verdict = detect_text(text)
    assert verdict.looping
    cut = deloop_walk(walk, "cut")
    assert cut is not None and render(cut) == cut_text(text, verdict).strip()
    assert 4 < len(cut) < 20 and cut == walk[: len(cut)]
    assert deloop_walk(walk, "drop") is None and deloop_walk(walk, "none") == walk
    clean = [0, 1, 2, BACK_ID, 0, 3, BACK_ID, 0, 5, 6, EOS_ID]
    assert deloop_walk(clean, "drop") == clean == deloop_walk(clean, "cut")
    config = TrainConfig(batch_size=16, loop_fraction=0.0, deloop="drop")
    batch = make_batch(random.Random(1), config, 4, random.Random(2))  # 4 looping walks
    rows_without_loss = int((batch.labels == -100).all(1).sum())
    assert rows_without_loss == batch.delooped and 0 < batch.delooped <= 4


def test_recent_bias_counts_steps_over_visible_keys() -> None:
    low = torch.finfo(torch.float32).min
    # one query row over 6 keys: key 1 is padding inside the cache, the query is at key 5
    mask = torch.tensor([[[[0.0, low, 0.0, 0.0, 0.0, 0.0]]]])
    bias = recent_bias(mask, steps=2, factor=0.25)
    expected = torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 0.0]) * math.log(0.25)
    assert torch.allclose(bias[0, 0, 0], expected)
    # four steps back reach past the padding to key 0; the padding itself gets no bias
    wider = recent_bias(mask, steps=4, factor=0.25)[0, 0, 0]
    assert torch.allclose(wider, torch.tensor([1.0, 0, 1, 1, 1, 0]) * math.log(0.25))


def test_decayed_attention_multiplies_recent_weights_and_survives_cache_and_reload(
    tmp_path: Path,
) -> None:
    config = TrainConfig(layers=1, attention_decay_steps=2, attention_decay_factor=0.5)
    torch.manual_seed(0)
    model = build_model(config).eval()
    plain = build_model(TrainConfig(layers=1)).eval()
    plain.load_state_dict(model.state_dict())
    ids = torch.tensor([[5, 9, 14, 3, 7, 21]])
    with torch.no_grad():
        decayed_weights = model(ids, output_attentions=True).attentions[0]
        plain.set_attn_implementation("eager")
        plain_weights = plain(ids, output_attentions=True).attentions[0]
    # the last query: weights on keys 3 and 4 halved, then the row renormalised
    scaled = plain_weights[0, :, -1] * torch.tensor([1, 1, 1, 0.5, 0.5, 1])
    assert torch.allclose(
        decayed_weights[0, :, -1], scaled / scaled.sum(-1, keepdim=True), atol=1e-6
    )
    with torch.no_grad():
        whole = model(ids).logits[0, -1]
        prefix = model(ids[:, :-1], use_cache=True)
        step = model(ids[:, -1:], cache=prefix.past_key_values).logits[0, -1]
    assert torch.allclose(whole, step, atol=1e-5)
    model.save_pretrained(tmp_path)
    reloaded = LlamaForCausalLM.from_pretrained(tmp_path).eval()
    use_attention_decay(reloaded)
    with torch.no_grad():
        assert torch.allclose(reloaded(ids).logits[0, -1], whole, atol=1e-5)


def test_hints_go_before_the_kind_with_the_highest_loss_and_are_scored_out() -> None:
    graph = StarGraph(
        root=0, arms=((1, 2), (3, 4)), edges=((0, 1), (1, 2), (0, 3), (3, 4)), target_arm=1
    )
    walk = [0, 1, BACK_ID, 0, 3, 4, EOS_ID]
    assert [POSITION_KINDS[k] for k in position_kinds(walk)] == [
        "start",
        "arm choice",
        "in arm",
        "return",
        "arm choice",
        "in arm",
        "in arm",
    ]
    # per-token losses: the arm choices are the hard positions
    logits = torch.zeros(1, len(walk), len(VOCABULARY))
    ids = torch.tensor([walk])
    kinds = torch.tensor([position_kinds(walk)])
    for position in range(len(walk) - 1):
        if kinds[0, position + 1] != 1:  # make every other next token nearly certain
            logits[0, position, walk[position + 1]] = 20.0
    losses = loss_by_kind(logits, ids, kinds)
    assert max(range(4), key=lambda k: losses[k] if not math.isnan(losses[k]) else -1) == 1
    hint = hint_span(graph)
    assert render(hint) == f"? {NODE_NAMES[4]} {NODE_NAMES[3]} :"
    hinted = insert_hints(walk, graph, 1)
    assert hinted == [0, *hint, 1, BACK_ID, 0, *hint, 3, 4, EOS_ID]
    assert strip_hints(hinted) == walk
    meta = {"graph": graph.to_dict(), "hints": True}
    text = render(hinted[:-1])
    assert scored_walk(meta, text, stopped=True) == walk
    assert scored_walk({"graph": graph.to_dict()}, text, stopped=True) == hinted  # as before


def test_a_hinted_run_chooses_a_kind_and_trains_on_hints(tmp_path: Path) -> None:
    tiny_run("hints", tmp_path, steps=8)
    training = json.loads((tmp_path / "runs/hints/seed-0/result.json").read_text())["training"]
    assert training["hints"]["kind"] in POSITION_KINDS and len(training["hints"]["losses"]) == 4
    assert (
        training["train_tokens"]
        > json.loads((tmp_path / "runs/no_hints/seed-0/result.json").read_text())["training"][
            "train_tokens"
        ]
    )  # the same walks, with hints in them


def test_the_memory_marks_exactly_the_walks_node_tokens() -> None:
    config = TrainConfig(layers=1, visited_memory=True)
    rng = random.Random(0)
    batch = make_batch(rng, config.model_copy(update={"batch_size": 2}), 0)
    start = prompt_length(3, 3)
    positions = torch.arange(batch.ids.shape[1]).unsqueeze(0)
    marks = visited_marks(batch.ids, positions, start)
    for row in range(2):
        expected = [
            position >= start and token < len(NODE_NAMES)
            for position, token in enumerate(batch.ids[row].tolist())
        ]
        assert marks[row].tolist() == expected
        assert batch.ids[row, start - 1] == VOCABULARY.index(":")  # the walk starts there
    torch.manual_seed(0)
    model = build_model(config).eval()
    marker = add_visited_memory(model, start)
    with torch.no_grad():
        marker.copy_(torch.ones_like(marker))
        marked = model(input_ids=batch.ids[:1]).logits
    # the prompt is unmarked (same logits as without the memory's hook), the walk is not
    plain = build_model(config).eval()
    plain.load_state_dict(model.state_dict())
    with torch.no_grad():
        unmarked = plain(input_ids=batch.ids[:1]).logits
    assert torch.allclose(marked[0, :start], unmarked[0, :start], atol=1e-5)
    assert not torch.allclose(marked[0, start:], unmarked[0, start:])
    # cached generation marks as the full forward does: one decode step equals it
    with torch.no_grad():
        prefix = model(input_ids=batch.ids[:1, : start + 2], use_cache=True)
        step = model(
            input_ids=batch.ids[:1, start + 2 : start + 3], cache=prefix.past_key_values
        ).logits
    assert torch.allclose(step[0, -1], marked[0, start + 2], atol=1e-4)


def test_the_memory_is_saved_with_the_model_and_put_back_on_load(tmp_path: Path) -> None:
    tiny_run("memory", tmp_path)
    folder = tmp_path / "runs/visited_memory/seed-0/model"
    memory = json.loads((folder / "config.json").read_text())["loopfix_visited_memory"]
    assert memory["walk_start"] == prompt_length(3, 3) and len(memory["marker"]) == 64
    model = LlamaForCausalLM.from_pretrained(folder)
    use_visited_memory(model)
    assert model.model._forward_pre_hooks
    trainings = {
        arm: json.loads((tmp_path / f"runs/{arm}/seed-0/result.json").read_text())["training"]
        for arm in ("no_memory", "visited_memory")
    }
    assert (
        trainings["visited_memory"]["train_flops"]
        == 6
        * (trainings["visited_memory"]["parameters"] + 64)
        * trainings["visited_memory"]["train_tokens"]
    )


def test_the_multi_step_heads_target_the_token_k_ahead() -> None:
    labels = torch.tensor([[-100, -100, 5, 6, 7, 8]])
    assert ahead_targets(labels, 1).tolist() == [[-100, 5, 6, 7, 8, -100]]
    assert ahead_targets(labels, 2).tolist() == [[5, 6, 7, 8, -100, -100]]
    assert ahead_targets(labels, 3).tolist() == [[6, 7, 8, -100, -100, -100]]
    # a head that maps the hidden state to the one-hot of the token 2 ahead has ~0 loss
    heads = MultiStepHeads(hidden_size=16, heads=1)
    output = torch.nn.Linear(16, 16, bias=False)
    torch.nn.init.eye_(output.weight)
    hidden = torch.zeros(1, 6, 16)
    for position, target in enumerate(ahead_targets(labels, 2)[0].tolist()):
        if target != -100:
            hidden[0, position, target] = 50.0
    assert float(heads.loss(hidden, output, labels).detach()) < 1e-6
    assert heads.flops_parameters(output) == 16 * 16 + 16 + 16 * 16


def test_g55_walks_are_valid_and_an_experiment_runs_on_g55(tmp_path: Path) -> None:
    rng = random.Random(1)
    for _ in range(50):
        graph = make_graph(rng, 5, 5)
        assert len(graph.arms) == 5 and all(len(arm) == 5 for arm in graph.arms)
        assert len(set(graph.prompt_ids()[1:-4:3] + graph.prompt_ids()[2:-4:3])) == 26
        assert len(graph.prompt_ids()) == prompt_length(5, 5)
        assert score_walk(graph, teacher_walk(rng, graph, 0.5, 0.3)).success
        assert score_walk(graph, graph.optimal_walk()).success
    result = tiny_run("loop-data", tmp_path, graph=[5, 5])
    for record in run_records(tmp_path).values():
        assert (record["training"]["config"]["arms"], record["training"]["config"]["depth"]) == (
            5,
            5,
        )
        assert record["evaluation"]["settings"][0]["n"] == 3
    assert result["seeds"] == 2
