"""What soak.py and overload.py share: starting normd on a free loopback port, reading its resident
memory and its allocator's figures, and stopping it with a drain."""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request


def parse_cpu_list(text):
    """"0-11,14" -> {0, ..., 11, 14} (taskset's list syntax); "" -> None (no pinning)."""
    if not text:
        return None
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def pinned_to(cpus):
    """A Popen preexec_fn that confines the child to `cpus` (None: leaves it as inherited)."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def start_normd(build, out, extra_flags, who, cpus=None):
    """Starts build/server/normd with `extra_flags` (on `cpus` only, when given), logging to
    out/normd.log; returns (process, HOST:PORT) once it logs "listening on", or exits the script with a
    message naming `who`."""
    log_path = os.path.join(out, "normd.log")
    normd = subprocess.Popen([os.path.join(build, "server/normd"), "--listen=127.0.0.1:0",
                              "--metrics-listen=127.0.0.1:0"] + extra_flags,
                             stdout=open(log_path, "w"), stderr=subprocess.STDOUT, preexec_fn=pinned_to(cpus))
    for _ in range(300):
        time.sleep(0.1)
        m = re.search(r"listening on (\S+)", open(log_path).read())
        if m:
            return normd, m.group(1)
    normd.kill()
    sys.exit(f"{who}: normd did not start; see {log_path}")


def stop_normd(normd):
    """SIGTERM (normd drains), then SIGKILL after 60 s; True if it exited within the 60 s."""
    normd.send_signal(signal.SIGTERM)
    try:
        normd.wait(timeout=60)
        return True
    except subprocess.TimeoutExpired:
        normd.kill()
        return False


def metrics_address(out):
    """HOST:PORT of the metrics endpoint of the normd started by start_normd (from its log), or None."""
    m = re.search(r"metrics on (\S+)", open(os.path.join(out, "normd.log")).read())
    return m.group(1) if m else None


def heap_in_use_bytes(address):
    """normd_allocator_bytes{state="in_use"} from normd's /metrics: the heap's live bytes (resident
    memory also counts what the allocator keeps after it was freed), or -1 when unavailable."""
    if address is None:
        return -1
    try:
        text = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
    except OSError:
        return -1
    m = re.search(r'^normd_allocator_bytes\{state="in_use"\} (\S+)', text, re.M)
    return float(m.group(1)) if m else -1


def rss_bytes(pid):
    """Resident set size of a process from /proc, or -1."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1
