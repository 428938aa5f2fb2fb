import random

from loopfix.lab.stargraph import (
    BACK_ID,
    EOS_ID,
    NODE_NAMES,
    StarGraph,
    looping_teacher_walk,
    make_graph,
    make_graphs,
    render,
    score_walk,
    teacher_walk,
)


def test_graph_shape_and_prompt_layout() -> None:
    graph = make_graph(random.Random(0), arms=3, depth=4)
    nodes = {graph.root, *(n for arm in graph.arms for n in arm)}
    assert len(nodes) == 1 + 3 * 4  # distinct labels
    assert len(graph.edges) == 12
    prompt = render(graph.prompt_ids()).split()
    assert prompt[0] == "<s>" and prompt[-4:] == [
        "?",
        NODE_NAMES[graph.root],
        NODE_NAMES[graph.target],
        ":",
    ]
    assert prompt[3::3][:12] == [","] * 12  # one separator after each edge


def test_graphs_are_reproducible_per_seed_and_differ_across_seeds() -> None:
    assert make_graphs(7, 5, 3, 3) == make_graphs(7, 5, 3, 3)
    assert make_graphs(7, 5, 3, 3) != make_graphs(8, 5, 3, 3)


def test_teacher_walks_are_legal_successes_and_explore() -> None:
    rng = random.Random(1)
    backtracks = 0
    for _ in range(300):
        graph = make_graph(rng, 3, 3)
        walk = teacher_walk(rng, graph, p_correct=0.5, p_backtrack=0.3)
        score = score_walk(graph, walk)
        assert score.success and score.legal_move_rate == 1.0
        backtracks += walk.count(BACK_ID)
    assert backtracks > 100  # the teacher really enters wrong arms


def test_looping_walk_repeats_its_last_excursion_verbatim() -> None:
    rng = random.Random(2)
    graph = make_graph(rng, 3, 3)
    walk, onset = looping_teacher_walk(rng, graph, 0.5, 0.3, cap=52)
    assert len(walk) == 52 and EOS_ID not in walk
    assert walk[onset - 1] == graph.root and walk[onset - 2] == BACK_ID
    unit_start = max(i for i in range(onset - 1) if walk[i] == graph.root) + 1
    unit = walk[unit_start:onset]
    assert walk[onset:] == (unit * 52)[: 52 - onset]
    assert score_walk(graph, walk).valid  # a loop of legal moves


def test_checker_scores_failures() -> None:
    graph = StarGraph(
        root=0, arms=((1, 2), (3, 4)), edges=((0, 1), (1, 2), (0, 3), (3, 4)), target_arm=1
    )
    assert score_walk(graph, [0, 3, 4, EOS_ID]).success
    wrong_stop = score_walk(graph, [0, 1, 2, EOS_ID])
    assert wrong_stop.valid and not wrong_stop.success and wrong_stop.final_node == 2
    illegal = score_walk(graph, [0, 2, EOS_ID])  # 2 is not an arm start
    assert not illegal.valid and illegal.legal_moves == 1 and illegal.moves == 2
    back_then_wrong = score_walk(graph, [0, 1, BACK_ID, 3])  # `back` must return to the root
    assert back_then_wrong.legal_moves == 2 and not back_then_wrong.stopped
    assert not score_walk(graph, [3, 4, EOS_ID]).valid  # must start at the root
