"""Bad input, as a careless or unlucky user gives it, to every verb (issue 13).

Each case asserts the exit status, that the error is ONE line on stderr (however narrow the
terminal), and that no input and no earlier output changed. Cases that must fail before a model
loads name a model that does not exist: if the option were checked after loading, the error
would be about the model instead.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from loopfix.cli import app
from loopfix.cli.common import errors
from loopfix.models import loading, tiny_model, tiny_tokenizer
from loopfix.patch import EditRequest, EditSite, build_patch, save_patch
from loopfix.patch.format import MANIFEST_NAME, TENSORS_NAME
from tests import valid_files

LOOPING = "Wait, let me double-check 12 * 13: 12 * 13 = 156, so the answer is 156.\n\n" * 12
CLEAN = "The three primary colours of light are red, green and blue."
MISSING = "loopfix:no-such-testbed"
TINY_RUN = ["--n", "1", "--temperatures", "0", "--max-new-tokens", "4"]


@pytest.fixture(autouse=True)
def narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 30-column terminal: a message that wrapped would show up as several lines."""
    monkeypatch.setattr(errors, "width", 30)


def invoke(*args: str | Path) -> object:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def error_lines(result: object, code: int = 2) -> list[str]:
    assert result.exit_code == code, result.output  # type: ignore[attr-defined]
    stderr = result.stderr.splitlines()  # type: ignore[attr-defined]
    # transformers' own progress bar while a model loads is not part of the message.
    lines = [line for line in stderr if line.strip() and not line.startswith("Loading weights")]
    assert lines and all(line.startswith("error") for line in lines), lines
    return lines


def one_line_error(result: object, *needles: str, code: int = 2) -> str:
    lines = error_lines(result, code)
    assert len(lines) == 1, lines
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# 1. clean: output == input, unreadable lines, bad bytes, interruption


def test_clean_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "x.jsonl", [{"text": CLEAN}, {"text": LOOPING}])
    before = snapshot(tmp_path)
    one_line_error(invoke("clean", data, "--out", data), "also an input")
    assert snapshot(tmp_path) == before


def test_clean_names_malformed_and_non_utf8_lines_and_keeps_every_good_one(
    tmp_path: Path,
) -> None:
    data = tmp_path / "x.jsonl"
    data.write_bytes(
        json.dumps({"text": CLEAN}).encode()
        + b'\n{"text": "caf\xe9"}\nnot json\n'
        + json.dumps({"text": CLEAN + " again"}).encode()
        + b"\n"
    )
    original = data.read_bytes()
    out = tmp_path / "clean.jsonl"
    result = invoke("clean", data, "--out", out)
    lines = error_lines(result, code=0)
    assert len(lines) == 2
    assert "line 2" in lines[0] and "byte 0xe9 at byte offset" in lines[0]
    assert "line 3, column 1" in lines[1]
    kept = [json.loads(line)["text"] for line in out.read_text().splitlines()]
    assert kept == [CLEAN, CLEAN + " again"]
    assert data.read_bytes() == original
    replaced = invoke("clean", data, "--out", out, "--errors", "replace")
    assert len(error_lines(replaced, code=0)) == 1  # only the line that is not JSON
    assert "caf\ufffd" in out.read_text()


def test_clean_that_checks_nothing_fails_and_keeps_the_earlier_output(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "x.jsonl", [{"text": LOOPING}, {"text": CLEAN}])
    out = tmp_path / "clean.jsonl"
    out.write_text("an earlier, complete output\n")
    before = snapshot(tmp_path)
    lines = error_lines(invoke("clean", data, "--out", out, "--field", "nope"))
    assert len(lines) == 3  # one per line that could not be checked, then the verdict
    assert "line 1: no text to check: no string field 'nope'" in lines[0]
    assert "nothing checked" in lines[2] and "wrote nothing" in lines[2]

    # 2. patches verify themselves
    assert snapshot(tmp_path) == before


@pytest.fixture
def patch_folder(tmp_path: Path) -> Path:
    model = tiny_model("llama", seed=1)
    width = model.config.hidden_size
    direction = torch.randn(width, generator=torch.Generator().manual_seed(7))
    request = EditRequest(EditSite(0, "down_proj"), direction, torch.tensor([0, 3, 4]), 6.0)
    save_patch(build_patch(model, [request], model_id="tiny"), tmp_path / "patch")
    return tmp_path / "patch"


def flip_stored_byte(patch: Path, tensor: str) -> None:
    path = patch / TENSORS_NAME
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    data[8 + length + header[tensor]["data_offsets"][0]] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("slot", ["before", "after"])
def test_a_damaged_patch_is_refused_by_inspect_apply_and_revert(
    tmp_path: Path, patch_folder: Path, slot: str
) -> None:
    flip_stored_byte(patch_folder, f"edit0.{slot}")
    before = snapshot(tmp_path)
    message = one_line_error(invoke("patch", "inspect", patch_folder), f"edit0.{slot}")
    assert "patch file is damaged" in message and "different model" not in message
    for verb in ("apply", "revert"):
        one_line_error(
            invoke("patch", verb, MISSING, patch_folder, "--out", tmp_path / "out"),
            "patch file is damaged",
        )
    assert snapshot(tmp_path) == before


def test_a_patch_for_another_model_blames_the_model(tmp_path: Path, patch_folder: Path) -> None:
    other = tmp_path / "other"
    tiny_model("llama", seed=2).save_pretrained(other)
    tiny_tokenizer().save_pretrained(other)
    before = snapshot(tmp_path)
    result = invoke("patch", "apply", other, patch_folder, "--out", tmp_path / "out")
    one_line_error(result, "different model", "refusing to edit")
    assert snapshot(tmp_path) == before  # no "out", no partial folder


def test_a_manifest_without_edits_or_of_the_old_format_is_one_line(
    tmp_path: Path, patch_folder: Path
) -> None:
    manifest = json.loads((patch_folder / MANIFEST_NAME).read_text())
    del manifest["edits"]
    (patch_folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    one_line_error(invoke("patch", "inspect", patch_folder), "lacks 'edits'")
    manifest["format"] = "loopfix.patch/1"
    (patch_folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    one_line_error(invoke("patch", "inspect", patch_folder), "re-create the patch")


# 3. resume keyed by content; readers never modify a run


@pytest.fixture
def testbed_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(loading.testbed_dir() / "stargraph", folder)
    return folder


def scan(model: Path | str, out: Path, *options: str) -> object:
    return invoke("scan", model, *TINY_RUN, "--out", out, *options)


def test_records_without_an_identity_are_not_adopted(tmp_path: Path, testbed_copy: Path) -> None:
    out = tmp_path / "run"
    assert scan(testbed_copy, out).exit_code == 0
    (out / "scan.json").unlink()
    before = snapshot(tmp_path)
    one_line_error(scan(testbed_copy, out), "no scan.json", "start fresh")
    assert snapshot(tmp_path) == before
    (out / "scan.json").write_text("{not json")
    before = snapshot(tmp_path)
    one_line_error(scan(testbed_copy, out), "scan.json is damaged", "start fresh")
    assert snapshot(tmp_path) == before


def test_other_weights_or_an_edited_suite_are_not_resumed(
    tmp_path: Path, testbed_copy: Path
) -> None:
    out = tmp_path / "run"
    suite = write_jsonl(tmp_path / "suite.jsonl", [{"id": "a", "prompt": "a b"}])
    assert scan(testbed_copy, out, "--suite", str(suite)).exit_code == 0
    shutil.copy(loading.testbed_dir() / "stargraph-clean" / "model.safetensors", testbed_copy)
    before = snapshot(tmp_path)
    one_line_error(scan(testbed_copy, out, "--suite", str(suite)), "model.safetensors")
    assert snapshot(tmp_path) == before
    shutil.copy(loading.testbed_dir() / "stargraph" / "model.safetensors", testbed_copy)
    write_jsonl(suite, [{"id": "a", "prompt": "a c"}])
    before = snapshot(tmp_path)
    one_line_error(scan(testbed_copy, out, "--suite", str(suite)), "suite's prompts differ")
    assert snapshot(tmp_path) == before


def test_damaged_identities_of_compare_and_of_repair_records_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "guards").mkdir()
    (tmp_path / "guards" / "compare.json").write_text("{")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "scan.json").write_text('{"config": {"model": 1}}')
    write_jsonl(tmp_path / "run" / "records.jsonl", [])
    before = snapshot(tmp_path)
    result = invoke("compare", "loopfix:stargraph", *TINY_RUN, "--out", tmp_path / "guards")
    one_line_error(result, "compare.json is damaged", "start fresh")
    records = tmp_path / "run" / "records.jsonl"
    result = invoke(
        "repair",
        "loopfix:stargraph",
        "--suite",
        "arith",
        "--records",
        records,
        "--out",
        tmp_path / "r",
    )
    one_line_error(result, "scan.json is not a readable scan identity")
    assert snapshot(tmp_path) == before


def test_scan_compare_reads_a_torn_run_without_changing_it(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert scan("loopfix:stargraph", tmp_path / name).exit_code == 0
    with (tmp_path / "b" / "records.jsonl").open("a") as handle:
        handle.write('{"prompt_id": "torn')  # a scan still writing, or killed mid-line
    before = snapshot(tmp_path)
    result = invoke("scan", "--compare", tmp_path / "a", tmp_path / "b")
    assert result.exit_code == 0, result.output
    assert snapshot(tmp_path) == before


# 4. checks that checked nothing fail


@pytest.mark.parametrize(
    ("rows", "options", "reason"),
    [
        ([{"text": LOOPING}], ["--field", "nope"], "no string field 'nope'"),
        (["not json at all"], [], "Expecting value"),
        ([{"choices": [{"index": 0}]}, {"choices": [{"message": {}}]}], [], "choices hold no"),
    ],
    ids=["missing-field", "all-unreadable", "openai-without-message"],
)
def test_fail_on_loop_fails_when_nothing_was_checked(
    tmp_path: Path, rows: list[object], options: list[str], reason: str
) -> None:
    data = tmp_path / "x.jsonl"
    data.write_text("".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    if len(rows) > 1:
        write_jsonl(data, rows)
    before = snapshot(tmp_path)
    lines = error_lines(invoke("detect", data, "--fail-on-loop", *options))
    assert len(lines) == len(rows) + 1 and reason in lines[0]
    assert "nothing checked" in lines[-1]
    assert snapshot(tmp_path) == before


def test_fail_on_loop_fails_when_some_input_went_unchecked(tmp_path: Path) -> None:
    data = tmp_path / "x.jsonl"
    first = json.dumps({"text": CLEAN}).encode() + b"\n"
    data.write_bytes(first + b'{"text": "\xff"}\n')
    lines = error_lines(invoke("detect", data, "--fail-on-loop"))
    offset = len(first) + len(b'{"text": "')
    assert len(lines) == 2 and f"line 2: byte 0xff at byte offset {offset} " in lines[0]
    assert "could not be checked" in lines[1]
    assert invoke("detect", data, "--fail-on-loop", "--errors", "replace").exit_code == 0


# 5. tracebacks that became one line


def test_a_folder_that_is_not_a_model_and_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    before = snapshot(tmp_path)
    one_line_error(scan(tmp_path / "notes", tmp_path / "run"), "not a model folder")
    one_line_error(scan(tmp_path / "empty", tmp_path / "run"), "it is empty")
    one_line_error(invoke("lab", "eval", tmp_path / "empty"), "not a model folder")
    assert snapshot(tmp_path) == before


def test_a_non_utf8_suite_names_its_line(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_bytes(b'{"id": "a", "prompt": "a b"}\n{"id": "b", "prompt": "\xff"}\n')
    before = snapshot(tmp_path)
    result = scan("loopfix:stargraph", tmp_path / "run", "--suite", str(suite))
    one_line_error(result, "suite.jsonl:2: byte 0xff at column 24 is not UTF-8")
    assert snapshot(tmp_path) == before


def test_an_unwritable_output_is_one_line(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "x.jsonl", [{"text": CLEAN}])
    (tmp_path / "blocker").write_text("a file where a folder should be")
    before = snapshot(tmp_path)
    one_line_error(
        invoke("detect", data, "--json", tmp_path / "blocker" / "v.jsonl"), "cannot write"
    )
    one_line_error(invoke("clean", data, "--out", tmp_path / "blocker" / "c.jsonl"), "cannot write")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["scan", MISSING, "--temperatures", "-1"], "--temperatures"),
        (["scan", MISSING, "--temperatures", "nan"], "--temperatures"),
        (["lab", "eval", MISSING, "--temperatures", "-1"], "--temperatures"),
        (["lab", "eval", MISSING, "--n", "0"], "--n"),
        (["lab", "eval", MISSING, "--threads", "0"], "--threads"),
        (["doctor", MISSING, "--n", "0"], "--n"),
        (["doctor", MISSING, "--temperatures", "-1"], "--temperatures"),
        (["repair", MISSING, "--ks", "0"], "--ks"),
        (["repair", MISSING, "--ks", "1.5"], "--ks"),
        (["repair", MISSING, "--threads", "0"], "--threads"),
        (["repair", MISSING, "--alphas", "inf"], "--alphas"),
        (["lab", "train", "--steps", "0", "--out", "never"], "--steps"),
        (["lab", "train", "--threads", "0", "--out", "never"], "--threads"),
        (
            ["compare", MISSING, "--guards", "none,dry", "--guard-arg", "dry.multiplier=Infinity"],
            "multiplier",
        ),
    ],
    ids=lambda value: "_".join(value) if isinstance(value, list) else value,
)
def test_bad_options_are_one_line_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], option: str
) -> None:
    monkeypatch.chdir(tmp_path)
    message = one_line_error(invoke(*args), option)
    assert "testbed" not in message  # the missing model was never reached
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "verb", [["repair", MISSING], ["doctor", MISSING], ["scan", "loopfix:stargraph"]]
)
def test_out_that_is_a_file_fails_before_any_work(tmp_path: Path, verb: list[str]) -> None:
    (tmp_path / "taken").write_text("a file")
    before = snapshot(tmp_path)
    one_line_error(invoke(*verb, "--out", tmp_path / "taken"), "is a file")

    # 6. misreadings
    assert snapshot(tmp_path) == before


def test_lab_eval_refuses_a_model_that_is_not_a_testbed(tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    tiny_model("llama").save_pretrained(model)
    tiny_tokenizer().save_pretrained(model)
    before = snapshot(tmp_path)
    result = invoke("lab", "eval", model, "--n", "2", "--json", tmp_path / "eval.json")
    one_line_error(result, "not a star-graph testbed")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "verb",
    [["scan"], ["compare"], ["repair"], ["lab", "eval"], ["patch", "apply"], ["patch", "revert"]],
)
def test_every_verb_that_loads_a_model_has_trust_remote_code(verb: list[str]) -> None:
    result = invoke(*verb, "--help")
    assert result.exit_code == 0 and "--trust-remote-code" in result.output


# 7. the hostile sweep of issue 37: counts, URLs, usage errors, damaged or unknown models


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["scan", MISSING, "--n", "1000000000000"], "--n"),
        (["compare", MISSING, "--n", "1000000000000"], "--n"),
        (["doctor", MISSING, "--n", "1000000000000"], "--n"),
        (["consistency", MISSING, "--n", "1000000000000"], "--n"),
        (["lab", "eval", MISSING, "--n", "1000000000000"], "--n"),
        (["consistency", MISSING, "--url", "not a url"], "--url"),
        (["consistency", MISSING, "--url", "ftp://127.0.0.1:8000"], "--url"),
        (["scan", "http://127.0.0.1:99999", "--backend", "openai"], "model"),
        (["doctor", "ftp://127.0.0.1/v1"], "model"),
    ],
    ids=lambda value: "_".join(value)[:60] if isinstance(value, list) else value,
)
def test_huge_counts_and_bad_urls_are_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], option: str
) -> None:
    monkeypatch.chdir(tmp_path)
    message = one_line_error(invoke(*args), option)
    assert "testbed" not in message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["scan", "--no-such-option"], ["No such option: --no-such-option", "loopfix scan --help"]),
        (["no-such-verb"], ["No such command", "loopfix --help"]),
        (["patch", "apply"], ["Missing argument", "loopfix patch apply --help"]),
        (["scan", MISSING, "--n", "many"], ["'--n'", "valid integer"]),
    ],
)
def test_usage_errors_are_one_line_naming_the_help(args: list[str], needles: list[str]) -> None:
    one_line_error(invoke(*args), *needles)


def test_scan_compare_refuses_to_write_into_a_run_it_reads(tmp_path: Path) -> None:
    run = tmp_path / "a"
    assert scan("loopfix:stargraph", run).exit_code == 0
    before = snapshot(tmp_path)
    one_line_error(invoke("scan", "--compare", run, run, "--out", run), "also an input")
    assert snapshot(tmp_path) == before


def test_a_truncated_weights_file_is_one_line_and_leaves_no_run(
    tmp_path: Path, testbed_copy: Path
) -> None:
    weights = testbed_copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    before = snapshot(tmp_path)
    one_line_error(scan(testbed_copy, tmp_path / "run"), "model.safetensors", "damaged")
    assert snapshot(tmp_path) == before
    assert not (tmp_path / "run").exists()


def test_an_unreachable_hub_is_one_line_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import huggingface_hub

    # A closed port on this machine stands for a Hub that cannot be reached.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")
    started = time.monotonic()
    result = scan("loopfix-tests/no-such-model", tmp_path / "run")
    one_line_error(result, "loopfix-tests/no-such-model", "cannot be reached", "cache")
    assert time.monotonic() - started < 20  # not five logged retries over half a minute
    assert not (tmp_path / "run").exists()


# 7. issue 56: a hang, a probe for another model, records and suites a scan would not write


@pytest.mark.timeout(120)  # a one-arm graph made the repeat probe wait for ever
@pytest.mark.parametrize("graph", ["1,1", "1,49"])
def test_a_graph_without_a_wrong_arm_is_refused_not_hung(tmp_path: Path, graph: str) -> None:
    args = ["--graph", graph, "--steps", "20", "--n", "10", "--seeds", "2"]
    result = invoke("lab", "experiment", "margin", *args, "--out", tmp_path / "out")
    one_line_error(result, "--graph", "k >= 2 arms")
    assert not (tmp_path / "out").exists()


@pytest.mark.timeout(120)
def test_every_graph_the_check_accepts_gives_its_looping_walks_and_repeat_probe() -> None:
    from pydantic import ValidationError

    from loopfix.lab.config import TrainConfig
    from loopfix.lab.stargraph import NODE_NAMES, looping_teacher_walk, make_graph
    from loopfix.scan.testbed import repeat_probe_batch

    accepted = 0
    for arms in range(1, len(NODE_NAMES)):
        for depth in range(1, len(NODE_NAMES) // arms + 1):
            try:
                config = TrainConfig(arms=arms, depth=depth)
            except ValidationError:
                continue
            accepted += 1
            repeat_probe_batch(config, 2, seed=arms, repeats=2)
            rng = random.Random(depth)
            looping_teacher_walk(rng, make_graph(rng, arms, depth), 0.5, 0.3, 60)
    assert accepted > 100


@pytest.fixture(scope="module")
def probe_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return valid_files.warning_probe(tmp_path_factory.mktemp("warn") / "warning_probe.json")


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"model": "loopfix:stargraph-clean"}, ["model: fitted on 'loopfix:stargraph-clean'"]),
        ({"layer": 9}, ["layer:", "layers 0..3, not 9"]),
        ({"window": 0}, ["window:", "greater than or equal to 1"]),
        ({"window": 10**12}, ["window:", "less than or equal to"]),
        ({"cut": 1}, ["one number per feature"]),
        ({"cut": 3}, ["weights: 63 state weights", "64"]),
        ({"scale": "1"}, ["scale:", "valid array"]),
    ],
)
def test_a_warning_probe_that_does_not_fit_the_model_is_one_line(
    tmp_path: Path, probe_file: Path, change: dict[str, object], needles: list[str]
) -> None:
    data = json.loads(probe_file.read_text())
    cut = int(change.pop("cut", 0))  # type: ignore[call-overload]
    for name in ("weights", "mean", "scale")[:cut]:
        data[name] = data[name][:-1]
    probe = write_jsonl(tmp_path / "probe.json", [{**data, **change}])
    before = snapshot(tmp_path)
    result = scan("loopfix:stargraph", tmp_path / "run", "--warning", str(probe))
    one_line_error(result, "--warning", "probe.json", *needles)
    assert snapshot(tmp_path) == before


@pytest.fixture(scope="module")
def tiny_scan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return valid_files.scan_folder(tmp_path_factory.mktemp("scan") / "scan")


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("tokens", ["a", 3], "tokens[0]: Input should be a valid integer"),
        ("tokens", [-4], "tokens[0]: Input should be greater than or equal to 0"),
        ("settings", "greedy", "settings: Input should be an object"),
        ("settings", {"temperature": "0"}, "settings.temperature"),
        ("tokens", [10**6], "tokens: id 1000000 is not in the model's 57 ids"),
    ],
)
def test_warn_on_records_a_scan_would_not_write_is_one_line(
    tmp_path: Path, tiny_scan: Path, field: str, value: object, needle: str
) -> None:
    folder = tmp_path / "scan"
    shutil.copytree(tiny_scan, folder)
    lines = (folder / "records.jsonl").read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), field: value})
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    before = snapshot(tmp_path)
    result = invoke("warn", folder, "loopfix:stargraph", "--out", tmp_path / "out")
    where = "" if "ids" in needle else "records.jsonl:2: "
    one_line_error(result, where + needle)
    assert snapshot(tmp_path) == before


def test_warn_bounds_its_window_before_any_work(tmp_path: Path) -> None:
    result = invoke("warn", tmp_path, MISSING, "--window", str(10**9), "--out", tmp_path / "o")
    one_line_error(result, "--window: at most")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ({"id": "a", "prompt": ""}, "suite.jsonl:1: field 'prompt'"),
        (
            {
                "id": "a",
                "prompt": "p",
                "answer": "3",
                "checker": "sequence",
                "meta": {"given": "1,2"},
            },
            "suite.jsonl:1: field 'meta.given'",
        ),
        (
            {"id": "a", "prompt": "p", "checker": "stargraph", "meta": {"graph": {"arms": "12"}}},
            "suite.jsonl:1: field 'meta.graph'",
        ),
    ],
)
def test_a_suite_item_generation_or_its_checker_cannot_use_is_one_line_before_any_work(
    tmp_path: Path, item: dict[str, object], needle: str
) -> None:
    suite = write_jsonl(tmp_path / "suite.jsonl", [item])
    before = snapshot(tmp_path)
    one_line_error(scan("loopfix:stargraph", tmp_path / "run", "--suite", str(suite)), needle)
    assert snapshot(tmp_path) == before


def test_detect_states_on_binary_input_is_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "binary.txt"
    binary.write_bytes(bytes(range(128, 256)) * 8)
    # each unreadable line is reported, then the one error: nothing was checked
    assert "nothing checked" in error_lines(invoke("detect", binary, "--states"))[-1]
    empty = write_jsonl(tmp_path / "empty.jsonl", [{"text": ""}, {"text": LOOPING}])
    result = invoke("detect", empty, "--states", "--json", tmp_path / "out.jsonl")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert rows[0]["probe"] is None and rows[1]["looping"]
