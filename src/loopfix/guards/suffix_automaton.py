"""An online suffix automaton that answers DRY's question in time independent of context length.

DRY asks, before each token: for every candidate token y, how long is the longest suffix s of the
text such that s followed by y already occurred in the text? (llama.cpp recomputes this with a
Z-algorithm pass over the whole context, O(N) per token.)

A suffix automaton of the text answers it online. Its states group substrings by where they end;
the suffix-link chain from `last` visits the suffixes of the whole text from longest to shortest,
and a state has a transition on y exactly when its strings occur followed by y. Transition sets
only grow along the chain (if s·y occurs, so does every suffix of s followed by y), so the
answer for y is the length of the first chain state with a y-transition.

Cost: `extend` is amortised O(1) (Blumer et al.; at most 2N states and 3N transitions). A query
walks the chain from the shallowest state longer than `cap` down to length `minimum`: at most
`cap - minimum + 1` states, plus the transitions it lists. DRY's penalty saturates at a length
(llama.cpp clamps the exponent so base**exponent stays a finite float), so `cap` is a constant
and a query does not grow with the context; states longer than `cap` are skipped with a cached
pointer per state (valid forever: a clone only inserts a state into a chain).
"""

from __future__ import annotations

__all__ = ["SuffixAutomaton"]


class SuffixAutomaton:
    """Suffix automaton over an integer sequence, extended one token at a time."""

    def __init__(self) -> None:
        self.length: list[int] = [0]
        self.link: list[int] = [-1]
        self.next: list[dict[int, int]] = [{}]
        self.last = 0
        self._over: dict[int, int] = {}  # state -> an ancestor-or-self longer than the cap

    def _new_state(self, length: int, link: int, transitions: dict[int, int]) -> int:
        self.length.append(length)
        self.link.append(link)
        self.next.append(transitions)
        return len(self.length) - 1

    def extend(self, token: int) -> None:
        cur = self._new_state(self.length[self.last] + 1, 0, {})
        state = self.last
        while state != -1 and token not in self.next[state]:
            self.next[state][token] = cur
            state = self.link[state]
        if state != -1:
            target = self.next[state][token]
            if self.length[state] + 1 == self.length[target]:
                self.link[cur] = target
            else:
                clone = self._new_state(
                    self.length[state] + 1, self.link[target], dict(self.next[target])
                )
                while state != -1 and self.next[state].get(token) == target:
                    self.next[state][token] = clone
                    state = self.link[state]
                self.link[target] = clone
                self.link[cur] = clone
        self.last = cur

    def _shallowest_over(self, cap: int) -> int:
        """The shortest suffix state of the whole text that is still longer than `cap`.

        Walks up the suffix links, jumping along cached pointers and compressing the path (as in
        union-find), so a periodic text, whose chain is long, is crossed in O(1) amortised.
        """
        path = []
        state = self.last
        while True:
            jump = self._over.get(state, state)
            if jump == state and self.length[self.link[state]] > cap:
                jump = self.link[state]
            if jump == state:
                break
            path.append(state)
            state = jump
        for visited in path:
            self._over[visited] = state
        return state

    def continuation_lengths(self, minimum: int, cap: int | None = None) -> dict[int, int]:
        """token -> length of the longest suffix of the text that occurs followed by the token.

        Only lengths >= minimum (>= 1) are reported; lengths above `cap` are reported as `cap`.
        """
        found: dict[int, int] = {}
        state = self.last
        if cap is not None and self.length[state] > cap:
            over = self._shallowest_over(cap)
            found = dict.fromkeys(self.next[over], cap)
            state = self.link[over]
        while state > 0 and self.length[state] >= minimum:
            size = self.length[state]
            for token in self.next[state]:
                found.setdefault(token, size)
            state = self.link[state]
        return found
