"""`ServeMetrics`: the proxy's Prometheus metrics, in a registry of their own (one per app, so
several apps in one process never share counts).

Token counts are the detector's tokens (words, numbers, punctuation runs, newlines; see
`loopfix.detect.split_text`), the same unit for every upstream, not the model's tokens.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_TOKEN_BUCKETS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class ServeMetrics:
    """Every metric the proxy exports; `render()` is the /metrics body."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "loopfix_requests",
            "Requests proxied, by route, action and HTTP status.",
            ["route", "action", "status"],
            registry=registry,
        )
        self.stream_tokens = Counter(
            "loopfix_stream_tokens",
            "Detector tokens watched, by part (content or reasoning).",
            ["part"],
            registry=registry,
        )
        self.loops = Counter(
            "loopfix_loops_detected",
            "Loops found (detect_text's kind: verbatim, near, segment, semantic; or upstream "
            "for finish_reason 'repetition'), mid-stream or at the part's finish, by part and "
            "the action taken; a loop found again in a continuation counts again.",
            ["kind", "part", "action"],
            registry=registry,
        )
        self.verdicts = Counter(
            "loopfix_part_verdicts",
            "Verdicts of detect_text on finished parts (the text as the part ended), by part, "
            "looping (true or false) and cut (true: finish_reason 'length'; false; unknown).",
            ["part", "looping", "cut"],
            registry=registry,
        )
        self.cuts = Counter(
            "loopfix_cut",
            "Choices cut by the token limit (finish_reason 'length').",
            registry=registry,
        )
        self.rescues = Counter(
            "loopfix_rescues",
            "Rescues and think-escapes, by outcome: finished (the continuation ended without "
            "another loop), looped (it looped again), failed (the upstream could not continue).",
            ["outcome"],
            registry=registry,
        )
        self.onset = Histogram(
            "loopfix_loop_onset_tokens",
            "Detector tokens of the part before its loop began.",
            ["part"],
            buckets=_TOKEN_BUCKETS,
            registry=registry,
        )
        self.completion_tokens = Histogram(
            "loopfix_completion_tokens",
            "Detector tokens per finished choice, by part (the reasoning-length distribution "
            "is part='reasoning').",
            ["part"],
            buckets=_TOKEN_BUCKETS,
            registry=registry,
        )
        self.upstream_latency = Histogram(
            "loopfix_upstream_latency_seconds",
            "Seconds from sending a request upstream to its response headers.",
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.upstream_errors = Counter(
            "loopfix_upstream_errors",
            "Upstream failures: connect, timeout, status (an HTTP error answer) or protocol "
            "(a reply that is not OpenAI-shaped server-sent events).",
            ["reason"],
            registry=registry,
        )
        self.agent_loops = Counter(
            "loopfix_agent_loops",
            "Stuck agents (docs/agents.md): chat requests whose history shows an agent stuck "
            "now (where='history'), and answers that repeat one tool call (where='answer'), by "
            "the stuck rule's kind and the agent action taken (observe for an answer).",
            ["kind", "action", "where"],
            registry=registry,
        )
        self.active_streams = Gauge(
            "loopfix_active_streams", "Requests being proxied now.", registry=registry
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
