#!/usr/bin/env python3
"""normd's memory bound under hostile load: peak resident memory against --max-memory-bytes.

Each scenario starts a fresh normd with the budget, runs overload_client (tests/soak/overload_client.cc)
against it, samples normd's resident memory (VmRSS every 50 ms, and VmHWM, the kernel's own peak, at
the end), then checks that normd still serves (1-row clients for 2 s, every call OK and correct) and
that it drains and exits 0 on SIGTERM. Scenarios:
  a16    16 clients of 4096 x 4096 bf16 requests (32 MiB each way), closed loop
  a64    64 such clients
  b      --silent-connections connections (1,000), each with a NormalizeStream that writes 64 x 4096
         bf16 requests (512 KiB) and never reads a response
  c      16 large clients and --small-clients 1-row clients side by side
  alone  the 1-row clients alone (their p99 without an attack, for comparison)
Checks, per scenario: peak RSS <= budget + --overhead-mib (64): normd reads a Normalize request, or a
stream's next message, only when the budget has room, so clients wait in HTTP/2 flow control instead of
being read into memory; no answer wrong; no error other than a
refusal: RESOURCE_EXHAUSTED, or UNAVAILABLE "GOAWAY received" (gRPC's resource quota closing a connection
to new calls; clients retry those); every request normd accepted and answered OK reached its client
(normd's count at exit against the clients'); the 1-row clients' calls all OK in the check afterwards;
normd exits 0 on SIGTERM. The 1-row clients' p99 during each attack is
reported, not judged (on a shared 2-core machine it measures the machine as much as normd).

    python3 tests/soak/overload_memory.py --build=build/ci --seconds=20 --out=/tmp/overload-memory
    python3 tests/soak/overload_memory.py --build=build/ci --quick      # CI: shorter, fewer connections
Client processes run on --client-cpus and normd on --server-cpus when given (taskset syntax).
"""
import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time

from normd_run import parse_cpu_list, pinned_to


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def raise_fd_limit():
    """1,000 connections need more descriptors than the usual soft limit of 1,024, on both sides."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def start_normd(args, name, extra):
    log_path = os.path.join(args.out, f"{name}.normd.log")
    cpus = args.server_cpus

    def prepare():
        raise_fd_limit()
        if cpus is not None:
            os.sched_setaffinity(0, cpus)

    normd = subprocess.Popen([os.path.join(args.build, "server/normd"), "--backend=" + args.backend,
                              "--listen=127.0.0.1:0", "--metrics-listen=", f"--max-memory-bytes={args.budget_mib << 20}"]
                             + args.normd_arg + extra, stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                             preexec_fn=prepare)
    for _ in range(600):
        time.sleep(0.1)
        text = open(log_path).read()
        if "normd serving" in text:
            return normd, re.search(r"listening on (\S+)", text).group(1), log_path
        if normd.poll() is not None:
            break
    normd.kill()
    sys.exit(f"overload_memory: normd did not start; see {log_path}")


def run_clients(args, target, flags, seconds, name):
    cmd = [os.path.join(args.build, "tests/soak/overload_client"), f"--target={target}", f"--seconds={seconds}"] + flags

    def prepare():
        raise_fd_limit()
        if args.client_cpus is not None:
            os.sched_setaffinity(0, args.client_cpus)

    out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=prepare, timeout=seconds + 300)
    with open(os.path.join(args.out, f"{name}.clients.txt"), "w") as f:
        f.write(out.stdout + out.stderr)
    lines = {}
    for line in out.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        lines[kind] = dict((k, v.strip("'")) for k, v in re.findall(r"(\w+)=('[^']*'|\S+)", rest))
    return out.returncode, lines


def scenario(args, name, flags):
    normd, target, log_path = start_normd(args, name, [])
    idle_kib = status_kib(normd.pid, "VmRSS")
    peak = [idle_kib]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], status_kib(normd.pid, "VmRSS"))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    rc, seen = run_clients(args, target, flags, args.seconds, name)
    stop.set()
    sampler.join()
    hwm_kib = status_kib(normd.pid, "VmHWM")
    alive = normd.poll() is None
    rc_after, after = run_clients(args, target, ["--small-clients=2"], 3, name + ".after") if alive else (1, {})
    normd.send_signal(signal.SIGTERM)
    try:
        exit_code = normd.wait(timeout=60)
    except subprocess.TimeoutExpired:
        normd.kill()
        exit_code = "no exit within 60 s"
    # Accepted requests lost: normd counts the requests it accepted and answered OK (its drain line);
    # less the check afterwards, they must all have reached the unary clients (the silent streams'
    # answers are never read, so this holds only for scenarios without them).
    m = re.search(r"answered: (\d+) ok, (\d+) not ok", open(log_path).read())
    normd_ok = int(m.group(1)) - int(after.get("small", {}).get("ok", 0)) if m else -1
    normd_not_ok = int(m.group(2)) if m else -1
    clients_ok = sum(int(t.get("ok", 0)) for k, t in seen.items() if k != "silent")
    # On the CUDA backend the driver's own mappings and the pinned staging buffers are resident too:
    # there the bound counts from normd's resident memory once serving (idle), plus --pinned-mib.
    allowed_kib = ((args.budget_mib + args.overhead_mib + args.pinned_mib) << 10) + \
        (idle_kib if args.count_from_idle else 0)
    target_kib = allowed_kib
    failures = []
    peak_kib = max(peak[0], hwm_kib)
    if peak_kib > allowed_kib:
        failures.append(f"peak RSS {peak_kib >> 10} MiB > {allowed_kib >> 10} MiB allowed")
    if rc != 0:
        failures.append(f"overload_client exited {rc}")
    for kind, tally in seen.items():
        if int(tally.get("wrong", 0)):
            failures.append(f"{kind}: {tally['wrong']} wrong answers")
        if int(tally.get("other", 0)) and not (args.quota and "Broken pipe" in tally.get("first_other", "")):
            failures.append(f"{kind}: {tally['other']} errors other than RESOURCE_EXHAUSTED "
                            f"(first: {tally.get('first_other')})")
    if "silent" not in seen and normd_ok != clients_ok and not args.quota:
        failures.append(f"normd answered {normd_ok} accepted requests OK, the clients received {clients_ok}")
    small_after = after.get("small", {})
    if not alive:
        failures.append("normd died during the attack")
    elif rc_after != 0 or int(small_after.get("ok", 0)) == 0 or any(
            int(small_after.get(k, 0)) for k in ("refused", "other", "wrong")):
        failures.append(f"not serving afterwards: {small_after}")
    if exit_code != 0:
        failures.append(f"normd's exit on SIGTERM: {exit_code}")
    return {"name": name, "idle_mib": idle_kib / 1024, "peak_mib": peak_kib / 1024, "seen": seen,
            "allowed_mib": allowed_kib / 1024, "within_target": peak_kib <= target_kib,
            "normd_ok": normd_ok, "normd_not_ok": normd_not_ok,
            "after": small_after, "failures": failures}


def describe(r):
    parts = [f"{r['name']}: peak RSS {r['peak_mib']:.0f} MiB (idle {r['idle_mib']:.0f}); normd answered "
             f"{r['normd_ok']} accepted requests OK, {r['normd_not_ok']} not OK"]
    for kind in ("large", "small", "silent"):
        t = r["seen"].get(kind)
        if not t:
            continue
        if kind == "silent":
            parts.append(f"silent: {t['streams']} streams, {t['written']} messages written, "
                         f"{t['refused']} ended RESOURCE_EXHAUSTED, {t['cancelled']} cancelled at the end")
        else:
            parts.append(f"{kind}: {t['ok']} ok, {t['refused']} refused, {t['goaway']} GOAWAY, {t['other']} other, "
                         f"{t['wrong']} wrong, "
                         f"p50 {int(t['p50_us']) / 1000:.1f} ms p99 {int(t['p99_us']) / 1000:.1f} ms; "
                         f"first refusal '{t.get('first_refused', '')[:90]}'")
    parts.append("PASS" if not r["failures"] else "FAIL: " + "; ".join(r["failures"]))
    return "; ".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/ci")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--budget-mib", type=int, default=512, help="normd's --max-memory-bytes, in MiB")
    p.add_argument("--overhead-mib", type=int, default=64, help="fixed overhead allowed over the budget")
    p.add_argument("--pinned-mib", type=int, default=0,
                   help="CUDA: pinned staging allowed besides the budget (normd's --max-pinned-bytes)")
    p.add_argument("--count-from-idle", action="store_true",
                   help="bound = RSS once serving + budget + pinned + overhead (the CUDA driver's mappings "
                        "are a fixed cost larger than the overhead allowed)")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--silent-connections", type=int, default=1000)
    p.add_argument("--small-clients", type=int, default=4)
    p.add_argument("--scenarios", default="alone,a16,a64,b,c")
    p.add_argument("--quick", action="store_true",
                   help="CI: 6 s per scenario, scenarios a16, b (300 connections) and c")
    p.add_argument("--out", default="/tmp/normd-overload-memory")
    p.add_argument("--server-cpus", type=parse_cpu_list, default=None)
    p.add_argument("--client-cpus", type=parse_cpu_list, default=None)
    p.add_argument("--quota", action="store_true",
                   help="normd with --grpc-resource-quota: accepted requests that gRPC's quota cancels are "
                        "reported, not judged (gRPC 1.51 enforces its quota by cancelling streams)")
    p.add_argument("--normd-arg", action="append", default=[], help="extra normd flag (repeatable)")
    args = p.parse_args()
    if args.quota:
        args.normd_arg.append("--grpc-resource-quota")
    if args.quick:
        args.seconds, args.silent_connections, args.scenarios = 6, 300, "a16,b,c"
    os.makedirs(args.out, exist_ok=True)
    small = f"--small-clients={args.small_clients}"
    flags = {
        "alone": [small],
        "a16": ["--large-clients=16"],
        "a64": ["--large-clients=64"],
        "b": [f"--silent-connections={args.silent_connections}", small],
        "c": ["--large-clients=16", small],
    }
    results = []
    for name in args.scenarios.split(","):
        r = scenario(args, name, flags[name])
        print(describe(r), flush=True)
        results.append(r)
    lines = [f"budget {args.budget_mib} MiB (--max-memory-bytes) + {args.overhead_mib} MiB overhead"
             + (f" + {args.pinned_mib} MiB pinned" if args.pinned_mib else "")
             + (" over the idle RSS" if args.count_from_idle else "") + " allowed; "
             + ("gRPC's resource quota on; " if args.quota else "") +
             f"{args.seconds:g} s per scenario; backend {args.backend}"]
    lines.append("| scenario | idle / peak RSS MiB (allowed) | within budget + overhead | large ok / refused / GOAWAY / other / wrong | 1-row ok / refused / "
                 "GOAWAY, p99 ms | silent streams: written, refused | normd answered OK | result |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in results:
        l, s, q = r["seen"].get("large"), r["seen"].get("small"), r["seen"].get("silent")
        lines.append("| {} | {:.0f} / {:.0f} ({:.0f}) | {} | {} | {} | {} | {} | {} |".format(
            r["name"], r["idle_mib"], r["peak_mib"], r["allowed_mib"], "yes" if r["within_target"] else "no",
            f"{l['ok']} / {l['refused']} / {l['goaway']} / {l['other']} / {l['wrong']}" if l else "-",
            f"{s['ok']} / {s['refused']} / {s['goaway']}, {int(s['p99_us']) / 1000:.1f}" if s else "-",
            f"{q['streams']}: {q['written']}, {q['refused']}" if q else "-", r["normd_ok"],
            "PASS" if not r["failures"] else "FAIL"))
    with open(os.path.join(args.out, "overload_memory.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    sys.exit(1 if any(r["failures"] for r in results) else 0)


if __name__ == "__main__":
    main()
