"""The star-graph task G(k, d): graphs, prompts, the exploring teacher and the walk checker.

A graph has a root with k arms, each a directed path of d nodes; the target is the leaf of one
arm. Node labels are drawn at random per graph from a fixed pool, so the model must read the
edge list rather than memorise a layout. The prompt lists the edges shuffled, one `u v ,` per
edge (without the separator the child occurrence of a node confuses the lookup the model has
to learn), then `? root target :`. The answer is a walk that starts at the root.

The teacher is a memoryless search, as in arXiv 2512.12895: at the root it enters the target's
arm with probability `p_correct`, otherwise a random wrong arm (it may re-enter an arm it has
already explored); inside a wrong arm it notices with probability `p_backtrack` after each node
and goes `back` to the root, always at a wrong leaf. Choosing the right arm needs (d-1)-hop
backward chaining through the shuffled edges: the hard step. `back` is the easy cyclic action.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pydantic import TypeAdapter

NODE_NAMES: tuple[str, ...] = tuple(
    consonant + vowel for consonant in "bdfgklmnprstvz" for vowel in "aeiou"
)[:50]
PAD, BOS, EOS, QUERY, ANSWER, EDGE_END, BACK = "<pad>", "<s>", "</s>", "?", ":", ",", "back"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS, QUERY, ANSWER, EDGE_END, BACK)
VOCABULARY: tuple[str, ...] = NODE_NAMES + SPECIAL_TOKENS
TOKEN_ID: dict[str, int] = {token: index for index, token in enumerate(VOCABULARY)}
PAD_ID, BOS_ID, EOS_ID, BACK_ID = TOKEN_ID[PAD], TOKEN_ID[BOS], TOKEN_ID[EOS], TOKEN_ID[BACK]

WALK_CAP = 48
"""The generation cap of a walk when none is given (`lab eval`, the repair's testbed walks, the
doctor's stargraph scan, with or without --quick): a walk is over in a few dozen tokens, so 48
shows its loops. The one place this number lives."""


@dataclass(frozen=True)
class StarGraph:
    """One graph instance; nodes are token ids of `NODE_NAMES`."""

    root: int
    arms: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]  # in prompt order (shuffled)
    target_arm: int

    @property
    def target(self) -> int:
        return self.arms[self.target_arm][-1]

    def prompt_ids(self) -> list[int]:
        ids = [BOS_ID]
        for parent, child in self.edges:
            ids += [parent, child, TOKEN_ID[EDGE_END]]
        return ids + [TOKEN_ID[QUERY], self.root, self.target, TOKEN_ID[ANSWER]]

    def optimal_walk(self) -> list[int]:
        return [self.root, *self.arms[self.target_arm], EOS_ID]

    def to_dict(self) -> dict[str, object]:
        return {
            "root": self.root,
            "arms": [list(arm) for arm in self.arms],
            "edges": [list(edge) for edge in self.edges],
            "target_arm": self.target_arm,
        }

    @classmethod
    def from_dict(cls, data: object) -> StarGraph:
        """Inverse of `to_dict`; anything else is a ValueError."""
        graph = _GRAPH.validate_python(data)
        if not (all(graph.arms) and 0 <= graph.target_arm < len(graph.arms)):
            raise ValueError("a graph's arms hold nodes and its target_arm is one of them")
        return graph


_GRAPH = TypeAdapter(StarGraph)


def prompt_length(arms: int, depth: int) -> int:
    """Tokens in the prompt of a G(arms, depth) graph: `<s>`, three per edge, `? root target :`."""
    return 1 + 3 * arms * depth + 4


def check_graph_size(arms: int, depth: int) -> None:
    """Raise a one-line ValueError unless G(arms, depth) can be drawn (every node needs its own
    name token) and walked with a backtrack: the looping walks and the repeat probe repeat a
    wrong excursion, and a graph of one arm has none, so drawing them would never end."""
    if arms < 2 or depth < 1 or 1 + arms * depth > len(NODE_NAMES):
        raise ValueError(
            f"G({arms},{depth}): expected k >= 2 arms (one to get wrong) and d >= 1 nodes per "
            f"arm with 1 + k*d <= {len(NODE_NAMES)} nodes (the vocabulary's node names)"
        )


def make_graph(rng: random.Random, arms: int, depth: int) -> StarGraph:
    nodes = rng.sample(range(len(NODE_NAMES)), 1 + arms * depth)
    root = nodes[0]
    arm_nodes = tuple(tuple(nodes[1 + a * depth : 1 + (a + 1) * depth]) for a in range(arms))
    edges = []
    for arm in arm_nodes:
        parent = root
        for node in arm:
            edges.append((parent, node))
            parent = node
    rng.shuffle(edges)
    return StarGraph(root, arm_nodes, tuple(edges), rng.randrange(arms))


def make_graphs(seed: int, count: int, arms: int, depth: int) -> list[StarGraph]:
    rng = random.Random(seed)
    return [make_graph(rng, arms, depth) for _ in range(count)]


def teacher_walk(
    rng: random.Random,
    graph: StarGraph,
    p_correct: float,
    p_backtrack: float,
    max_excursions: int = 12,
) -> list[int]:
    """An exploring walk that ends with EOS at the target (always terminates)."""
    walk = [graph.root]
    wrong_arms = [a for a in range(len(graph.arms)) if a != graph.target_arm]
    for excursion in range(max_excursions + 1):
        if not wrong_arms or excursion == max_excursions or rng.random() < p_correct:
            return walk + [*graph.arms[graph.target_arm], EOS_ID]
        arm = graph.arms[rng.choice(wrong_arms)]
        for position, node in enumerate(arm):
            walk.append(node)
            if position == len(arm) - 1 or rng.random() < p_backtrack:
                walk += [BACK_ID, graph.root]
                break
    raise AssertionError("unreachable: the last excursion always takes the target arm")


def looping_teacher_walk(
    rng: random.Random, graph: StarGraph, p_correct: float, p_backtrack: float, cap: int
) -> tuple[list[int], int]:
    """A teacher walk that degenerates: cut at a backtrack boundary, then repeat the last wrong
    excursion verbatim until `cap` tokens, without EOS. Returns the walk and the loop onset."""
    while True:
        walk = teacher_walk(rng, graph, p_correct, p_backtrack)
        returns = [i for i in range(1, len(walk)) if walk[i - 1] == BACK_ID]
        if returns:
            break
    cut = rng.choice(returns)
    previous_return = max([0] + [r for r in returns if r < cut])
    segment = walk[previous_return + 1 : cut + 1]
    looped = walk[: cut + 1]
    onset = len(looped)
    while len(looped) < cap:
        looped += segment
    return looped[:cap], onset


@dataclass(frozen=True)
class WalkScore:
    """success: every move legal and the walk stops (EOS) at the target."""

    success: bool
    valid: bool  # every move legal
    legal_moves: int
    moves: int
    stopped: bool  # ended with EOS
    final_node: int | None

    @property
    def legal_move_rate(self) -> float:
        return self.legal_moves / self.moves if self.moves else 1.0


def score_walk(graph: StarGraph, walk: list[int]) -> WalkScore:
    """Score a generated walk. A move is one token after the first; after an illegal move the
    position re-synchronises to the node named (if any), so later moves are still judged."""
    children = {parent: child for parent, child in graph.edges}
    arm_starts = {arm[0] for arm in graph.arms}
    legal = moves = 0
    stopped = False
    current: int | None = walk[0] if walk else None
    expecting_root = False
    if current != graph.root:
        moves += 1  # the first token must be the root
    for token in walk[1:]:
        moves += 1
        if token == EOS_ID:
            stopped = True
            legal += 1
            break
        if expecting_root:
            ok = token == graph.root
            expecting_root = False
        elif token == BACK_ID:
            ok = current is not None and current != graph.root
            expecting_root = True
        elif current == graph.root:
            ok = token in arm_starts
        else:
            ok = current is not None and children.get(current) == token
        legal += ok
        current = token if token < len(NODE_NAMES) else current
    valid = legal == moves
    final_node = current if stopped else None
    return WalkScore(
        success=valid and stopped and final_node == graph.target,
        valid=valid,
        legal_moves=legal,
        moves=moves,
        stopped=stopped,
        final_node=final_node,
    )


def arm_choices(graph: StarGraph, walk: list[int]) -> list[int]:
    """The arm entered at each decision at the root, in order: the token after the walk's first
    root and after every `back root`, read as the arm whose first node it names (-1 for any other
    token, an illegal move that is still a choice at the root)."""
    first_nodes = {arm[0]: index for index, arm in enumerate(graph.arms)}
    decisions = [1] if walk[:1] == [graph.root] else []
    decisions += [
        i + 2 for i in range(len(walk) - 1) if walk[i] == BACK_ID and walk[i + 1] == graph.root
    ]
    return [first_nodes.get(walk[i], -1) for i in decisions if i < len(walk) and walk[i] != EOS_ID]


def render(ids: list[int]) -> str:
    return " ".join(VOCABULARY[i] for i in ids)


def walk_from_text(text: str, stopped: bool) -> list[int]:
    """The walk a rendered answer names, read back from its words so that any backend's text can
    be scored; EOS is not part of the text, so whether generation stopped comes separately. An
    unknown word becomes <pad>, which `score_walk` judges an illegal move."""
    words = [word for word in text.split() if word not in (BOS, EOS, PAD)]
    return [TOKEN_ID.get(word, PAD_ID) for word in words] + ([EOS_ID] if stopped else [])
