"""The stuck-agent rule on chat histories: each kind caught with its onset turn and unit, and
the things that repeat without being stuck (polling, back-off, edits) left alone."""

from __future__ import annotations

from loopfix.agents import AgentConfig, AgentVerdict, detect_stuck, openai_steps
from loopfix.agents.baselines import gemini_verdict, openhands_verdict

from .chats import Chat

LISTING = "src/app.py\nsrc/util.py\ntests/test_app.py"


def verdict(chat: Chat, **config: int) -> AgentVerdict:
    return detect_stuck(openai_steps(chat.messages), AgentConfig(**config))


def explored(chat: Chat) -> Chat:
    """Two ordinary first steps, so that an onset is not simply turn 1."""
    chat.call("bash", LISTING, command="ls -R src tests")
    return chat.call("read_file", "def app():\n    return 1\n", path="src/app.py")


def test_identical_calls_with_changing_thoughts_are_one_loop() -> None:
    chat = explored(Chat())
    for number in range(5):
        chat.call(
            "bash",
            "FAILED tests/test_app.py::test_x - assert 1 == 2",
            thought=f"Try {number}",
            command="pytest  tests/test_app.py",
        )
    found = verdict(chat)
    assert (found.stuck, found.kind, found.onset_turn, found.repeats) == (
        True,
        "identical-calls",
        3,
        5,
    )
    assert found.ongoing
    assert found.unit == (
        'bash({"command": "pytest tests/test_app.py"}) -> '
        "FAILED tests/test_app.py::test_x - assert 1 == 2",
    )


def test_argument_order_and_white_space_do_not_hide_a_repeat() -> None:
    chat = explored(Chat())
    for _ in range(2):
        chat.call(
            "search", "no matches for 'parse_date' in 120 files", query="parse_date", path="src"
        )
        chat.messages[-2]["tool_calls"][0]["function"]["arguments"] = (
            '{"path": "src",   "query": "parse_date"}'
        )
        chat.call(
            "search", "no matches for 'parse_date' in 120 files", query="parse_date", path="src"
        )
    assert verdict(chat).kind == "identical-calls"


def test_same_result_behind_changing_arguments() -> None:
    chat = explored(Chat())
    for start in (1, 2, 3, 4):
        chat.call(
            "bash",
            "ModuleNotFoundError is not raised here; the file has 12 lines",
            command=f"sed -n '{start},{start + 40}p' src/app.py | grep -c Module",
        )
    found = verdict(chat)
    assert (found.kind, found.onset_turn, found.repeats) == ("same-result", 3, 4)


def test_alternation() -> None:
    chat = explored(Chat())
    for _ in range(3):
        chat.call("open_file", "[File: src/app.py (40 lines)]", path="src/app.py")
        chat.call("scroll_down", "[File: src/app.py lines 1-40 of 40] end of file", lines=40)
    found = verdict(chat)
    assert (found.kind, found.onset_turn, found.repeats, len(found.unit)) == (
        "alternation",
        3,
        3,
        2,
    )


def test_monologue() -> None:
    chat = explored(Chat())
    for _ in range(3):
        chat.say("I will now fix the bug in src/app.py by changing the return value.")
    found = verdict(chat)
    assert (found.kind, found.onset_turn, found.repeats) == ("monologue", 3, 3)


def test_error_loop_with_varied_arguments() -> None:
    chat = explored(Chat())
    error = "Traceback (most recent call last):\nImportError: no module named apx"
    for code in ("import apx", "import apx as a", "from apx import run"):
        chat.call("python", error, code=code)
    found = verdict(chat)
    assert (found.kind, found.onset_turn) == ("error-loop", 3)


def test_polling_with_changing_results_is_not_stuck() -> None:
    chat = explored(Chat())
    for percent in range(0, 100, 10):
        chat.call("bash", f"build 4711: running, {percent}% done", command="ci status 4711")
    chat.call("bash", "build 4711: passed", command="ci status 4711")
    assert not verdict(chat).stuck
    assert not openhands_verdict(openai_steps(chat.messages)).stuck


def test_a_wait_with_back_off_is_not_stuck() -> None:
    chat = explored(Chat())
    for seconds in (5, 10, 20, 40, 80):
        chat.call(
            "bash",
            "deployment web-1 still pending, waiting",
            command=f"sleep {seconds}; kubectl get deploy web-1",
        )
    assert not verdict(chat).stuck


def test_different_edits_that_all_print_nothing_are_not_stuck() -> None:
    chat = explored(Chat())
    for line in range(10, 16):
        chat.call(
            "bash",
            "<returncode>0</returncode>\n<output>\n</output>",
            command=f"sed -i '{line}d' src/app.py",
        )
    assert not verdict(chat).stuck


def test_a_repeat_below_the_threshold_is_not_stuck_and_the_threshold_is_a_setting() -> None:
    chat = explored(Chat())
    for _ in range(3):
        chat.call("bash", "1 failed", command="pytest -q")
    assert not verdict(chat).stuck
    assert verdict(chat, identical_repeats=3).kind == "identical-calls"


def test_ongoing_only_ignores_a_loop_the_agent_left() -> None:
    chat = explored(Chat())
    for _ in range(4):
        chat.call("bash", "1 failed", command="pytest -q")
    chat.call("edit_file", "edited src/app.py: 1 line changed", path="src/app.py", line=2)
    steps = openai_steps(chat.messages)
    assert detect_stuck(steps).stuck and not detect_stuck(steps).ongoing
    assert not detect_stuck(steps, ongoing_only=True).stuck


def test_baselines_fire_at_their_published_counts() -> None:
    chat = explored(Chat())
    for _ in range(4):
        chat.call("bash", "1 failed", command="pytest -q")
    steps = openai_steps(chat.messages)
    assert openhands_verdict(steps).kind == "identical-calls"
    assert not gemini_verdict(steps).stuck  # gemini-cli needs 5 calls
    chat.call("bash", "1 failed", command="pytest -q")
    assert gemini_verdict(openai_steps(chat.messages)).onset_turn == 3


def test_a_call_id_reused_in_a_later_turn_gets_its_own_turns_result() -> None:
    chat = explored(Chat())
    for percent in (10, 20, 30, 40):  # a log that numbers its calls per turn: ids repeat
        chat.call("bash", f"build {percent}% done", command="make status")
        chat.messages[-2]["tool_calls"][0]["id"] = chat.messages[-1]["tool_call_id"] = "call_0"
    steps = openai_steps(chat.messages)
    assert [step.result for step in steps[2:]] == [f"build {p}% done" for p in (10, 20, 30, 40)]
    assert not verdict(chat).stuck  # polling, not four copies of the last result
