#!/usr/bin/env python3
"""deploy.compose_config, second half: what `docker-compose config -q` does not check.

Reads the configurations as docker-compose merges them and checks that
  - every GPU reservation asks for driver nvidia with capabilities [gpu] (a typo there makes Docker
    start the container without a GPU, or fail only on a GPU host);
  - the default stack runs normd on the CUDA backend with a GPU, the CPU variant runs a normd on the
    CPU backend, without any GPU, under the name normd (Prometheus's target);
  - normd listens on every interface in the container and has a health check through normctl;
  - Prometheus and Grafana mount the files under deploy/ that CI checks, at the paths their
    configurations name, and the Dockerfile sets what the services rely on.
Usage: check_compose.py DEPLOY_DIR
"""
import os
import re
import subprocess
import sys

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def merged(deploy_dir, args):
    out = subprocess.run(["docker-compose", *args, "config"], cwd=deploy_dir, check=True,
                         capture_output=True, text=True).stdout
    return yaml.safe_load(out)["services"]


def gpu_devices(service):
    reservations = (service.get("deploy") or {}).get("resources", {}).get("reservations", {})
    return reservations.get("devices") or []


def check_gpu_reservations(variant, services):
    for name, service in services.items():
        for device in gpu_devices(service):
            check(device.get("driver") == "nvidia",
                  f"{variant}: {name}: GPU reservation driver is {device.get('driver')!r}, not 'nvidia'")
            check(device.get("capabilities") == ["gpu"],
                  f"{variant}: {name}: GPU reservation capabilities {device.get('capabilities')!r}, "
                  "not ['gpu']")
            check("count" in device or "device_ids" in device,
                  f"{variant}: {name}: GPU reservation names neither count nor device_ids")


def started_by_default(services):
    return {name: s for name, s in services.items() if not s.get("profiles")}


def normd_services(services):
    return {n: s for n, s in services.items() if str(s.get("image", "")).startswith("normd:")}


def check_normd(variant, name, service, backend, wants_gpu):
    env = service.get("environment") or {}
    check(env.get("NORMD_BACKEND") == backend,
          f"{variant}: {name}: NORMD_BACKEND={env.get('NORMD_BACKEND')!r}, expected {backend!r}")
    check(bool(gpu_devices(service)) == wants_gpu,
          f"{variant}: {name}: GPU reservation {'missing' if wants_gpu else 'present'}")
    test = (service.get("healthcheck") or {}).get("test") or []
    check("/usr/local/bin/normctl" in test and "health" in test,
          f"{variant}: {name}: no gRPC health check through normctl ({test!r})")
    drain = re.fullmatch(r"(\d+)s", str(env.get("NORMD_DRAIN_TIMEOUT", "30s")))
    grace = re.fullmatch(r"(\d+)s", str(service.get("stop_grace_period", "10s")))
    if check(drain and grace, f"{variant}: {name}: drain timeout or stop_grace_period not in seconds"):
        check(int(grace.group(1)) > int(drain.group(1)),
              f"{variant}: {name}: stop_grace_period {grace.group(0)} does not exceed the drain timeout "
              f"{drain.group(0)}: Docker would SIGKILL normd mid-drain")


def mounts(service):
    result = {}
    for volume in service.get("volumes") or []:
        source, target = volume.split(":")[:2] if isinstance(volume, str) else (volume["source"],
                                                                                 volume["target"])
        result[target] = source
    return result


def check_mounts(deploy_dir, services):
    source = mounts(services["prometheus"]).get("/etc/prometheus/prometheus.yml")
    check(source and os.path.samefile(source, os.path.join(deploy_dir, "prometheus/prometheus.yml")),
          "prometheus does not mount deploy/prometheus/prometheus.yml at /etc/prometheus/prometheus.yml")
    grafana = mounts(services["grafana"])
    check(grafana.get("/etc/grafana/provisioning", "").endswith("grafana/provisioning"),
          "grafana does not mount deploy/grafana/provisioning at /etc/grafana/provisioning")
    with open(os.path.join(deploy_dir, "grafana/provisioning/dashboards/normd.yml")) as f:
        provider_path = yaml.safe_load(f)["providers"][0]["options"]["path"]
    check(grafana.get(provider_path, "").endswith("grafana/dashboards"),
          f"grafana does not mount deploy/grafana/dashboards at the provider's path {provider_path}")
    with open(os.path.join(deploy_dir, "grafana/provisioning/datasources/prometheus.yml")) as f:
        url = yaml.safe_load(f)["datasources"][0]["url"]
    check(url == "http://prometheus:9090", f"the Grafana datasource points at {url}, not the prometheus service")
    with open(os.path.join(deploy_dir, "prometheus/prometheus.yml")) as f:
        jobs = {j["job_name"]: j for j in yaml.safe_load(f)["scrape_configs"]}
    targets = [t for c in jobs.get("normd", {}).get("static_configs", []) for t in c["targets"]]
    check(targets == ["normd:9464"], f"prometheus's normd job scrapes {targets}, not normd:9464")


def check_dockerfile(path):
    with open(path) as f:
        text = f.read()
    bases = re.findall(r"^FROM\s+(\S+)", text, re.M)
    check(len(bases) == 2 and bases[0].endswith("-devel-ubuntu24.04") and bases[1].endswith("-runtime-ubuntu24.04")
          and bases[0].replace("devel", "runtime") == bases[1],
          f"Dockerfile: expected a CUDA devel build stage and the matching runtime stage, found {bases}")
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    check(users and users[-1].split(":")[0] not in ("root", "0"), f"Dockerfile: runs as {users or 'root'}")
    check("NORMD_LISTEN=0.0.0.0:50051" in text and "NORMD_METRICS_LISTEN=0.0.0.0:9464" in text,
          "Dockerfile: NORMD_LISTEN / NORMD_METRICS_LISTEN do not listen on 0.0.0.0")
    check("scripts/install-deps.sh" in text, "Dockerfile: the build stage does not use scripts/install-deps.sh")


def main():
    deploy_dir = os.path.abspath(sys.argv[1])
    gpu = merged(deploy_dir, ["-f", "docker-compose.yml"])
    dcgm = merged(deploy_dir, ["-f", "docker-compose.yml", "--profile", "dcgm"])
    cpu = merged(deploy_dir, ["-f", "docker-compose.yml", "-f", "docker-compose.cpu.yml"])
    for variant, services in [("gpu", gpu), ("gpu+dcgm", dcgm), ("cpu", cpu)]:
        check_gpu_reservations(variant, services)
        check(any(gpu_devices(s) for s in services.values()) or variant == "cpu",
              f"{variant}: no service reserves a GPU")
        check({"prometheus", "grafana"} <= set(started_by_default(services)),
              f"{variant}: prometheus and grafana are not both started by default")

    default_normd = normd_services(started_by_default(gpu))
    if check(list(default_normd) == ["normd"], f"gpu: normd services started by default: {list(default_normd)}"):
        check_normd("gpu", "normd", default_normd["normd"], "cuda", wants_gpu=True)
    check("dcgm" in (gpu.get("dcgm-exporter", {}).get("profiles") or []),
          "dcgm-exporter is not behind the profile dcgm")

    cpu_started = started_by_default(cpu)
    check(not any(gpu_devices(s) for s in cpu_started.values()),
          f"cpu: services started by default still reserve a GPU: "
          f"{[n for n, s in cpu_started.items() if gpu_devices(s)]}")
    cpu_normd = normd_services(cpu_started)
    if check(len(cpu_normd) == 1, f"cpu: normd services started by default: {list(cpu_normd)}"):
        name, service = next(iter(cpu_normd.items()))
        check_normd("cpu", name, service, "cpu", wants_gpu=False)
        aliases = ((service.get("networks") or {}).get("default") or {}).get("aliases") or []
        check(name == "normd" or "normd" in aliases, f"cpu: {name} does not answer to the name normd")

    check_mounts(deploy_dir, gpu)
    check_dockerfile(os.path.join(deploy_dir, "..", "Dockerfile"))

    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("ok: GPU reservations (driver nvidia, capabilities [gpu]), the CPU variant, mounts, Dockerfile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
