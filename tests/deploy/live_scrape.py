#!/usr/bin/env python3
"""deploy.live_scrape: normd and Prometheus on loopback, with the repository's prometheus.yml.

  1. starts normd (CPU backend) on free loopback ports and reads them from its log;
  2. starts Debian's prometheus with deploy/prometheus/prometheus.yml, its normd target rewritten to
     the test's metrics port, other jobs dropped, and a 1 s scrape interval;
  3. sends --good valid and --bad invalid Normalize calls (normd_deploy_load) over a few seconds;
  4. waits until Prometheus's sum of normd_requests_total{method="Normalize"} equals the calls sent,
     and checks the OK and INVALID_ARGUMENT counts;
  5. runs every query of the dashboard (Grafana's variables substituted) and the Replica variable's
     label_values() through Prometheus's HTTP API: each must succeed and return at least one series
     (only queries of dcgm-exporter's metrics, which CI does not run, may be empty).
Everything runs on 127.0.0.1 and is torn down at the end; on failure the logs are printed.
"""
import argparse
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import yaml

import dashboard_queries as dq

SCRAPE_INTERVAL_S = 1


class Failure(Exception):
    pass


class Process:
    """A child process whose combined output is collected in the background."""

    def __init__(self, name, argv):
        self.name = name
        self.lines = []
        self._lock = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))
                self._lock.notify_all()

    def wait_for(self, pattern, timeout_s):
        """The first match of `pattern` in the output, waiting up to timeout_s."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                for line in self.lines:
                    match = regex.search(line)
                    if match:
                        return match
                if self.proc.poll() is not None:
                    raise Failure(f"{self.name} exited ({self.proc.returncode}) before logging /{pattern}/")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Failure(f"{self.name} did not log /{pattern}/ within {timeout_s} s")
                self._lock.wait(min(remaining, 0.2))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log(self):
        with self._lock:
            return "\n".join(self.lines[-60:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_config(path, metrics_port):
    """The repository's configuration, pointed at the test's normd and scraping every second."""
    with open(path) as f:
        config = yaml.safe_load(f)
    jobs = [j for j in config["scrape_configs"] if j["job_name"] == "normd"]
    if len(jobs) != 1:
        raise Failure(f"{path}: expected one scrape job named normd")
    job = jobs[0]
    if "static_configs" not in job:
        raise Failure(f"{path}: the normd job has no static_configs to point at the test server")
    job["static_configs"] = [{"targets": [f"127.0.0.1:{metrics_port}"]}]
    config["scrape_configs"] = [job]  # dcgm-exporter and others: not on this machine
    config.setdefault("global", {})
    config["global"]["scrape_interval"] = f"{SCRAPE_INTERVAL_S}s"
    config["global"]["scrape_timeout"] = f"{SCRAPE_INTERVAL_S}s"
    return config


class PrometheusApi:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path, **params):
        url = f"{self.base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                return json.load(response)
        except urllib.error.HTTPError as e:  # 400 for a bad query: the body says why
            return json.load(e)

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self.get("/api/v1/query", **params)

    def ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False


def wait_until(what, predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        ok, last = predicate()
        if ok:
            return last
        time.sleep(0.25)
    raise Failure(f"timed out after {timeout_s} s waiting for {what}; last seen: {last}")


def scalar(api, expr):
    body = api.query(expr)
    result = body.get("data", {}).get("result", [])
    return float(result[0]["value"][1]) if body.get("status") == "success" and result else None


def run(args, workdir, processes):
    normd = Process("normd", [args.normd, "--backend=cpu", "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                              "--cpu-threads=2"])
    processes.append(normd)
    grpc_port = int(normd.wait_for(r"listening on 127\.0\.0\.1:(\d+)", 30).group(1))
    metrics_port = int(normd.wait_for(r"metrics on 127\.0\.0\.1:(\d+)", 30).group(1))
    normd.wait_for(r"normd serving", 30)
    instance = f"127.0.0.1:{metrics_port}"
    print(f"normd: gRPC 127.0.0.1:{grpc_port}, metrics {instance}")

    config_path = os.path.join(workdir, "prometheus.yml")
    with open(config_path, "w") as f:
        yaml.safe_dump(prometheus_config(args.prometheus_config, metrics_port), f)
    prom_port = free_port()
    prometheus = Process("prometheus", [args.prometheus, f"--config.file={config_path}",
                                        f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
                                        f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
    processes.append(prometheus)
    api = PrometheusApi(prom_port)
    wait_until("prometheus ready", lambda: (api.ready(), None), 30)
    wait_until("the first scrape of normd",
               lambda: (scalar(api, f'up{{job="normd", instance="{instance}"}}') == 1, None), 20)

    load = subprocess.run([args.load, f"--target=127.0.0.1:{grpc_port}", f"--good={args.good}",
                           f"--bad={args.bad}", f"--spread_ms={args.spread_ms}"],
                          capture_output=True, text=True, timeout=60)
    load_end = time.time()
    print(f"load: {load.stdout.strip()}")
    if load.returncode != 0:
        raise Failure(f"normd_deploy_load failed ({load.returncode}):\n{load.stdout}{load.stderr}")
    sent = args.good + args.bad

    total = wait_until(f"sum(normd_requests_total{{method=\"Normalize\"}}) == {sent}",
                       lambda: (lambda v: (v == sent, v))(
                           scalar(api, f'sum(normd_requests_total{{method="Normalize", instance="{instance}"}})')),
                       20)
    by_code = {r["metric"]["code"]: float(r["value"][1]) for r in api.query(
        f'sum by (code) (normd_requests_total{{method="Normalize", instance="{instance}"}})')["data"]["result"]}
    print(f"prometheus: normd_requests_total{{method=\"Normalize\"}} = {total:g}, by code {by_code}")
    if by_code != {"OK": float(args.good), "INVALID_ARGUMENT": float(args.bad)}:
        raise Failure(f"by code {by_code}, sent {args.good} OK and {args.bad} INVALID_ARGUMENT")
    return check_dashboard(api, args.dashboard, instance, load_end)


def check_dashboard(api, dashboard_path, instance, load_end):
    dashboard = dq.load(dashboard_path)
    # As Grafana would for the last 5 minutes on a ~1000-pixel panel with the datasource's
    # timeInterval equal to this test's scrape interval: $__interval 1 s, $__rate_interval 4 s.
    values = dq.grafana_intervals(scrape_interval_s=SCRAPE_INTERVAL_S, interval_s=1, range_s=300)
    values["instance"] = instance
    problems = []
    for name, variable in dq.variables(dashboard).items():
        match = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable.get("definition", ""))
        if not match:
            problems.append(f"variable {name}: cannot evaluate {variable.get('definition')!r}")
            continue
        body = api.get(f"/api/v1/label/{match.group(2)}/values", **{"match[]": match.group(1)})
        found = body.get("data", [])
        print(f"variable ${name}: label_values -> {found}")
        if body.get("status") != "success" or instance not in found:
            problems.append(f"variable {name}: {variable['definition']} gave {body}, expected {instance} in it")

    # Evaluated at the end of the load, so every rate() window holds samples taken during it.
    at = load_end
    for title, ref, expr, _ in dq.queries(dashboard):
        query = dq.substitute(expr, values)
        body = api.query(query, at=at)
        result = body.get("data", {}).get("result", [])
        finite = [r for r in result if math.isfinite(float(r["value"][1]))]
        status = body.get("status")
        may_be_empty = dq.reads_only_external_metrics(expr)
        print(f"  {status:7} {len(result):2} series ({len(finite):2} finite)  {title} [{ref}]"
              + ("  (dcgm-exporter, not run here)" if may_be_empty and not result else ""))
        if status != "success":
            problems.append(f"panel '{title}' {ref}: {body.get('error')}\n    {query}")
        elif not result and not may_be_empty:
            problems.append(f"panel '{title}' {ref}: no series\n    {query}")
        elif result and not finite and not may_be_empty:
            problems.append(f"panel '{title}' {ref}: only NaN/Inf values {result}\n    {query}")
    if problems:
        raise Failure("dashboard queries:\n  " + "\n  ".join(problems))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--normd", required=True)
    parser.add_argument("--load", required=True, help="normd_deploy_load")
    parser.add_argument("--prometheus", default="prometheus")
    parser.add_argument("--prometheus-config", required=True)
    parser.add_argument("--dashboard", required=True)
    parser.add_argument("--good", type=int, default=40)
    parser.add_argument("--bad", type=int, default=8)
    parser.add_argument("--spread-ms", type=int, default=3000)
    args = parser.parse_args()
    started = time.monotonic()
    processes = []
    with tempfile.TemporaryDirectory(prefix="normd-deploy-") as workdir:
        try:
            run(args, workdir, processes)
        except (Failure, OSError, subprocess.SubprocessError) as e:
            print(f"FAIL: {e}", file=sys.stderr)
            for p in processes:
                print(f"---- {p.name} output (last lines) ----\n{p.log()}", file=sys.stderr)
            return 1
        finally:
            for p in reversed(processes):
                p.stop()
    print(f"ok: live scrape in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
