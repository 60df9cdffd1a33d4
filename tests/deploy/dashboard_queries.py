"""The PromQL of a Grafana dashboard, as Grafana would send it to Prometheus.

Shared by check_dashboard.py (static checks) and live_scrape.py (every query against a live
Prometheus). Grafana's built-in variables are replaced as Grafana does it: $__interval is the step,
$__rate_interval = max($__interval + scrape interval, 4 x scrape interval), $__range the time range.
"""
import json
import re

# Metrics from dcgm-exporter, which CI does not run: their queries may return no series there. Every
# normd family has series on the CPU backend too (device "cpu"), so no normd query may be empty.
EXTERNAL_PREFIXES = ("DCGM_",)

_METRIC = re.compile(r"\b((?:normd|DCGM)_[A-Za-z0-9_]+)\b")
_SUFFIXES = ("_bucket", "_sum", "_count")


def load(path):
    with open(path) as f:
        return json.load(f)


def panels(dashboard):
    """Every panel that is not a row, including those inside collapsed rows."""
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            yield from panels(panel)
        else:
            yield panel


def queries(dashboard):
    """(panel title, refId, expr, instant) for every target of every panel."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield panel.get("title", "?"), target.get("refId", "?"), target.get("expr", ""), bool(
                target.get("instant"))


def variables(dashboard):
    return {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}


def metric_names(expr):
    """The metric families an expression reads (histogram suffixes removed)."""
    names = set()
    for name in _METRIC.findall(expr):
        for suffix in _SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        names.add(name)
    return names


def reads_only_external_metrics(expr):
    names = metric_names(expr)
    return bool(names) and all(n.startswith(EXTERNAL_PREFIXES) for n in names)


def grafana_intervals(scrape_interval_s, interval_s, range_s):
    rate = max(interval_s + scrape_interval_s, 4 * scrape_interval_s)
    return {
        "__rate_interval": f"{rate}s",
        "__interval": f"{interval_s}s",
        "__interval_ms": str(interval_s * 1000),
        "__range": f"{range_s}s",
        "__range_s": str(range_s),
        "__range_ms": str(range_s * 1000),
    }


def substitute(expr, values):
    """Replaces $name, ${name} and [[name]]; raises if a variable is left that `values` lacks."""

    def replace(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in values:
            raise KeyError(f"no value for ${name} in: {expr}")
        return values[name]

    # Longest names first is implied by \w+ being greedy ($__rate_interval before $__range).
    return re.sub(r"\$\{(\w+)\}|\$(\w+)|\[\[(\w+)\]\]", replace, expr)
