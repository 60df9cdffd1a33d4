#!/usr/bin/env python3
"""deploy.dashboard: the Grafana dashboard and provisioning, checked without Grafana or normd.

  - the dashboard names the provisioned datasource by its pinned uid, everywhere;
  - it has every panel an operator needs (a table below, one line each);
  - every normd selector is filtered by the Replica variable ($instance);
  - every histogram_quantile sums the buckets by (le, ...) first, so quantiles aggregate across
    replicas; every rate(_sum) is divided by the matching rate(_count) (a mean, not a sum);
  - every query parses: each, with Grafana's variables substituted, becomes a recording rule that
    `promtool check rules` must accept;
  - panel ids are unique and panels do not overlap on the 24-column grid.
The live scrape (live_scrape.py) then runs every query against Prometheus scraping a real normd.
Usage: check_dashboard.py GRAFANA_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

import dashboard_queries as dq

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def exprs_of(panel):
    return [t.get("expr", "") for t in panel.get("targets", [])]


def has_panel(dashboard, predicate):
    return any(predicate(p, "\n".join(exprs_of(p))) for p in dq.panels(dashboard))


def quantiles(metric, *qs):
    return lambda p, e: all(re.search(rf"histogram_quantile\({q}, .*{metric}_bucket", e) for q in qs)


# The panels the dashboard must have: (what, a predicate on a panel and its queries joined).
REQUIRED_PANELS = [
    ("request rate by method and code",
     lambda p, e: re.search(r"by \(method, code\) \(rate\(normd_requests_total", e)),
    ("error ratio",
     lambda p, e: 'code!="OK"' in e and "/" in e and p["fieldConfig"]["defaults"]["unit"] == "percentunit"),
    ("latency p50/p95/p99", quantiles("normd_request_duration_seconds", "0.5", "0.95", "0.99")),
    ("queue wait p50/p99", quantiles("normd_queue_wait_seconds", "0.5", "0.99")),
    ("stage breakdown per launch",
     lambda p, e: re.search(r"by \(stage\) \(rate\(normd_stage_duration_seconds_sum", e)),
    ("rows per launch (heatmap)", lambda p, e: p["type"] == "heatmap" and "normd_batch_rows_bucket" in e),
    ("requests per launch (heatmap)", lambda p, e: p["type"] == "heatmap" and "normd_batch_requests_bucket" in e),
    ("payload bandwidth in and out", lambda p, e: re.search(r"by \(direction\) \(rate\(normd_bytes_total", e)),
    ("kernel bandwidth against the copy ceiling",
     lambda p, e: "normd_kernel_bandwidth_bytes_per_second_bucket" in e
     and "normd_device_copy_bandwidth_bytes_per_second" in e),
    ("queue depth and in-flight", lambda p, e: "normd_queue_depth" in e and "normd_inflight_requests" in e),
    ("pinned and device memory", lambda p, e: "normd_pinned_bytes" in e and "normd_device_bytes" in e),
    ("workers by state", lambda p, e: re.search(r"by \(state\) \(normd_workers", e)),
]


def check_datasource(grafana_dir, dashboard):
    with open(os.path.join(grafana_dir, "provisioning/datasources/prometheus.yml")) as f:
        uid = yaml.safe_load(f)["datasources"][0]["uid"]
    things = [("variable " + v["name"], v.get("datasource")) for v in dq.variables(dashboard).values()]
    for panel in dq.panels(dashboard):
        things.append((f"panel '{panel.get('title')}'", panel.get("datasource")))
        things += [(f"panel '{panel.get('title')}' target {t.get('refId')}", t.get("datasource"))
                   for t in panel.get("targets", [])]
    for what, datasource in things:
        check((datasource or {}).get("uid") == uid, f"{what}: datasource {datasource}, not the provisioned uid {uid}")


def check_layout(dashboard):
    ids = [p.get("id") for p in dashboard["panels"]] + [c.get("id") for p in dashboard["panels"]
                                                         for c in p.get("panels", [])]
    check(len(ids) == len(set(ids)) and None not in ids, f"panel ids missing or repeated: {ids}")
    boxes = []
    for panel in dashboard["panels"]:
        g = panel["gridPos"]
        check(g["x"] >= 0 and g["x"] + g["w"] <= 24, f"panel '{panel.get('title')}' leaves the 24-column grid")
        for other_title, o in boxes:
            overlap_x = g["x"] < o["x"] + o["w"] and o["x"] < g["x"] + g["w"]
            overlap_y = g["y"] < o["y"] + o["h"] and o["y"] < g["y"] + g["h"]
            if overlap_x and overlap_y:
                failures.append(f"panels '{panel.get('title')}' and '{other_title}' overlap")
        boxes.append((panel.get("title"), g))


def check_queries(dashboard):
    variable = dq.variables(dashboard).get("instance")
    if check(variable is not None, "no `instance` variable (Replica picker)"):
        check(variable.get("multi") and variable.get("includeAll") and variable.get("allValue") == ".*",
              "the instance variable must allow several replicas and All (allValue .*)")
        check(re.fullmatch(r"label_values\(normd_\w+, instance\)", variable.get("definition", "")),
              f"the instance variable lists {variable.get('definition')!r}, not a normd metric's instances")
    for title, ref, expr, _ in dq.queries(dashboard):
        where = f"panel '{title}' {ref}"
        if not check(expr.strip(), f"{where}: empty query"):
            continue
        for metric, selector in re.findall(r"\b(normd_\w+)(\{[^}]*\})?", expr):
            check('instance=~"$instance"' in selector, f"{where}: {metric} is not filtered by $instance")
        for match in re.finditer(r"histogram_quantile\(", expr):
            rest = expr[match.end():]
            by = re.match(r"\s*[0-9.]+,\s*sum by \(([^)]*)\) \(rate\(", rest)
            check(by and "le" in [x.strip() for x in by.group(1).split(",")],
                  f"{where}: histogram_quantile not over buckets summed by (le, ...): {expr}")
        for metric in re.findall(r"rate\((\w+)_sum\{", expr):
            check(re.search(rf"/\s*\n?\s*sum[^/]*rate\({metric}_count\{{", expr),
                  f"{where}: rate({metric}_sum) is not divided by rate({metric}_count)")


def check_promql_parses(dashboard):
    promtool = shutil.which("promtool")
    if not check(promtool, "promtool not found (Debian package prometheus; run scripts/install-deps.sh)"):
        return 0
    values = dq.grafana_intervals(scrape_interval_s=5, interval_s=5, range_s=1800)
    values["instance"] = ".*"
    rules = []
    for i, (title, ref, expr, _) in enumerate(dq.queries(dashboard)):
        try:
            rules.append({"record": f"dashboard:query_{i}", "expr": dq.substitute(expr, values)})
        except KeyError as e:
            failures.append(f"panel '{title}' {ref}: {e}")
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        f.flush()
        result = subprocess.run([promtool, "check", "rules", f.name], capture_output=True, text=True)
    check(result.returncode == 0, f"promtool check rules rejects a dashboard query:\n{result.stdout}{result.stderr}")
    return len(rules)


def main():
    grafana_dir = sys.argv[1]
    dashboard = dq.load(os.path.join(grafana_dir, "dashboards/normd.json"))
    check(dashboard.get("uid") and dashboard.get("title"), "the dashboard has no uid or title")
    check_datasource(grafana_dir, dashboard)
    check_layout(dashboard)
    for what, predicate in REQUIRED_PANELS:
        check(has_panel(dashboard, predicate), f"no panel for {what}")
    check_queries(dashboard)
    parsed = check_promql_parses(dashboard)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"ok: {len(list(dq.panels(dashboard)))} panels, {parsed} queries parse, "
          f"{len(REQUIRED_PANELS)} required panels present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
