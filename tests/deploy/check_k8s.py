#!/usr/bin/env python3
"""deploy.k8s_manifests: the Kubernetes manifests agree with each other and with normd.

There is no cluster in CI, so this checks what a cluster would only reveal at the worst moment:
  - the Deployment asks for one GPU, probes grpc.health.v1 natively (grpc:) on the gRPC port, and
    normd's drain (plus the preStop pause) fits inside terminationGracePeriodSeconds, with a liveness
    probe that cannot kill a draining pod;
  - normd listens on 0.0.0.0, runs as a non-root user, and sets a max connection age;
  - the Service is headless (client-side round_robin over dns:///) and selects the pods;
  - the ServiceMonitor selects the Service and scrapes a port the Service names, at /metrics;
  - kustomization.yaml lists every manifest.
Usage: check_k8s.py K8S_DIR
"""
import os
import re
import sys

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def seconds(text):
    match = re.fullmatch(r"(\d+)(s|m)", str(text))
    if not match:
        raise ValueError(f"not a duration in s or m: {text!r}")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def load(k8s_dir):
    objects = {}
    for name in sorted(os.listdir(k8s_dir)):
        if name.endswith(".yaml") and name != "kustomization.yaml":
            with open(os.path.join(k8s_dir, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc:
                        objects[doc["kind"]] = (name, doc)
    return objects


def check_deployment(deployment):
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    check(spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items(),
          "Deployment: selector does not match the pod labels")
    [container] = [c for c in pod["containers"] if c["name"] == "normd"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    check(str(container["resources"]["limits"].get("nvidia.com/gpu")) == "1",
          "Deployment: limits nvidia.com/gpu is not 1")
    check(env.get("NORMD_LISTEN") == f"0.0.0.0:{ports.get('grpc')}",
          f"Deployment: NORMD_LISTEN={env.get('NORMD_LISTEN')} does not serve the grpc port on 0.0.0.0")
    check(env.get("NORMD_METRICS_LISTEN") == f"0.0.0.0:{ports.get('metrics')}",
          f"Deployment: NORMD_METRICS_LISTEN={env.get('NORMD_METRICS_LISTEN')} is not the metrics port on 0.0.0.0")
    check(seconds(env.get("NORMD_MAX_CONNECTION_AGE", "0s")) > 0,
          "Deployment: NORMD_MAX_CONNECTION_AGE unset: clients would never re-resolve the headless Service")
    security = pod.get("securityContext", {})
    check(security.get("runAsNonRoot") is True and security.get("runAsUser", 0) != 0,
          "Deployment: the pod does not run as a non-root user")

    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        grpc = container.get(probe, {}).get("grpc")
        check(grpc is not None and grpc.get("port") in (ports.get("grpc"), "grpc"),
              f"Deployment: {probe} is not a native grpc probe on the gRPC port")
        # normd's health service knows only the server-wide status (service "").
        check(grpc is None or grpc.get("service", "") == "", f"Deployment: {probe} asks for a named service")

    grace = pod.get("terminationGracePeriodSeconds", 30)
    drain = seconds(env.get("NORMD_DRAIN_TIMEOUT", "30s"))
    pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    pause = int(pre_stop[1]) if pre_stop[:1] == ["sleep"] else 0
    check(pause + drain < grace,
          f"Deployment: preStop {pause} s + drain {drain} s does not fit in terminationGracePeriodSeconds {grace}")
    liveness = container.get("livenessProbe", {})
    check(liveness.get("periodSeconds", 10) * liveness.get("failureThreshold", 3) > grace,
          "Deployment: the liveness probe could restart a draining pod (period x threshold <= grace period)")
    return ports


def main():
    k8s_dir = sys.argv[1]
    objects = load(k8s_dir)
    for kind in ("Deployment", "Service", "ServiceMonitor"):
        check(kind in objects, f"no {kind} under {k8s_dir}")
    if failures:
        return report()
    _, deployment = objects["Deployment"]
    _, service = objects["Service"]
    _, monitor = objects["ServiceMonitor"]

    container_ports = check_deployment(deployment)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    check(service["spec"].get("clusterIP") == "None", "Service: not headless (clusterIP: None)")
    check(service["spec"]["selector"].items() <= pod_labels.items(), "Service: selector does not match the pods")
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    for name, port in service_ports.items():
        target = port.get("targetPort", port["port"])
        check(target in container_ports or target in container_ports.values(),
              f"Service: port {name} targets {target}, which the container does not expose")

    check(monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items(),
          "ServiceMonitor: selector does not match the Service's labels")
    for endpoint in monitor["spec"]["endpoints"]:
        check(endpoint.get("port") in service_ports, f"ServiceMonitor: port {endpoint.get('port')} not in the Service")
        check(endpoint.get("path", "/metrics") == "/metrics", "ServiceMonitor: path is not /metrics")

    with open(os.path.join(k8s_dir, "kustomization.yaml")) as f:
        listed = set(yaml.safe_load(f)["resources"])
    files = {name for name, _ in objects.values()}
    check(listed == files, f"kustomization.yaml lists {sorted(listed)}, the manifests are {sorted(files)}")
    return report()


def report():
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("ok: Deployment (GPU, grpc probes, drain within the grace period), headless Service, ServiceMonitor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
