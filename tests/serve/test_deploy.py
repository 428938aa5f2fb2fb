"""The Grafana dashboard and the Prometheus rules query only metrics a live proxy exports, and
/metrics carries every metric the issue lists."""

import json
import re
from pathlib import Path

import httpx

from loopfix.serve import ServeConfig

from .proxy import free_port, running_proxy

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
_NAME = re.compile(r"\bloopfix_[a-z_]+\b")
# The text format declares counters under their sample name (`..._total`); histograms under the
# family name, whose samples add these suffixes.
_SUFFIXES = {"counter": ("",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}


def exported_names(metrics_text: str) -> set[str]:
    """Every sample name the families of a /metrics text can have (a labelled family with no
    samples yet still declares its TYPE)."""
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE loopfix_"):
            _, _, family, kind = line.split()
            names.update(family + suffix for suffix in _SUFFIXES[kind])
    return names


def dashboard_exprs() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "loopfix-serve.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def rule_exprs() -> list[str]:
    text = (DEPLOY / "prometheus" / "loopfix-rules.yml").read_text()
    return [line.split("expr:", 1)[1] for line in text.splitlines() if "expr:" in line]


def test_every_queried_metric_is_exported_by_a_live_proxy() -> None:
    with running_proxy(ServeConfig(upstream=f"http://127.0.0.1:{free_port()}")) as proxy:
        names = exported_names(httpx.get(proxy + "/metrics").text)
    exprs = dashboard_exprs() + rule_exprs()
    assert len(exprs) >= 12
    queried = {name for expr in exprs for name in _NAME.findall(expr)}
    assert queried and queried <= names, queried - names
    required = {
        "loopfix_requests_total",
        "loopfix_stream_tokens_total",
        "loopfix_loops_detected_total",
        "loopfix_cut_total",
        "loopfix_rescues_total",
        "loopfix_loop_onset_tokens_bucket",
        "loopfix_completion_tokens_bucket",
        "loopfix_upstream_latency_seconds_bucket",
        "loopfix_upstream_errors_total",
    }
    assert required <= names and required <= queried | {"loopfix_loop_onset_tokens_bucket"}


def test_the_scrape_example_scrapes_metrics_and_loads_the_rules() -> None:
    text = (DEPLOY / "prometheus" / "prometheus.yml").read_text()
    assert "metrics_path: /metrics" in text and "loopfix-rules.yml" in text
    assert (DEPLOY / "prometheus" / "loopfix-rules.yml").exists()
