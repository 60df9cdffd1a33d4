"""Once a second, what the machine and normd did: for telling normd's tail latency from the machine's.

Samples /proc/stat (CPU busy over all cores, and the steal a hypervisor took), normd's and the load
generators' CPU time, normd's page faults and involuntary context switches (a thread preempted),
and normd's resident memory. soak.py writes the samples to machine.csv and sets each 10-s window's
p99 beside the means of its seconds, so that a tail can be laid against what happened then.
"""
import os
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")
FIELDS = ["t", "busy_cores", "steal_cores", "normd_cores", "clients_cores", "others_cores",
          "normd_minflt_per_s", "normd_invol_cs_per_s", "normd_rss_mib"]


def _cpu_totals():
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = [int(x) for x in parts]
    idle = v[3] + v[4]
    steal = v[7] if len(v) > 7 else 0
    return sum(v[:8]) - idle - steal, steal  # busy jiffies (steal apart), steal jiffies


def _proc(pid):
    """(cpu jiffies, minor faults, involuntary context switches, rss KiB) of a process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        rest = s[s.rindex(")") + 2:].split()
        cpu, minflt = int(rest[11]) + int(rest[12]), int(rest[7])
        rss = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        invol = 0  # over every thread: the process's own status counts its main thread only
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/status") as f:
                    for line in f:
                        if line.startswith("nonvoluntary_ctxt_switches:"):
                            invol += int(line.split()[1])
            except OSError:
                pass  # a thread that ended meanwhile
        return cpu, minflt, invol, rss
    except (OSError, ValueError, IndexError):
        return None


class MachineSampler:
    def __init__(self, normd_pid, client_pids):
        self.normd_pid = normd_pid
        self.client_pids = client_pids  # a list the caller may update
        self.rows = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _clients_cpu(self):
        total = 0
        for pid in list(self.client_pids):
            p = _proc(pid)
            total += p[0] if p else 0
        return total

    def _run(self):
        prev_t, (prev_busy, prev_steal) = time.time(), _cpu_totals()
        prev_n, prev_c = _proc(self.normd_pid), self._clients_cpu()
        while not self._stop.wait(1.0):
            t, (busy, steal) = time.time(), _cpu_totals()
            n, c = _proc(self.normd_pid), self._clients_cpu()
            if n is None or prev_n is None:
                break
            dt = t - prev_t
            cores = lambda jiffies: jiffies / TICK / dt
            normd_cores = cores(n[0] - prev_n[0])
            clients_cores = max(0.0, cores(c - prev_c))  # a client that exited drops out
            busy_cores = cores(busy - prev_busy)
            self.rows.append([round(t, 3), round(busy_cores, 3), round(cores(steal - prev_steal), 3),
                              round(normd_cores, 3), round(clients_cores, 3),
                              round(max(0.0, busy_cores - normd_cores - clients_cores), 3),
                              round((n[1] - prev_n[1]) / dt), round((n[2] - prev_n[2]) / dt),
                              round(n[3] / 1024, 1)])
            prev_t, prev_busy, prev_steal, prev_n, prev_c = t, busy, steal, n, c

    def write_csv(self, path):
        with open(path, "w") as f:
            f.write(",".join(FIELDS) + "\n")
            for r in self.rows:
                f.write(",".join(str(x) for x in r) + "\n")

    def mean_over(self, start, end, field):
        i = FIELDS.index(field)
        vals = [r[i] for r in self.rows if start < r[0] <= end]
        return sum(vals) / len(vals) if vals else float("nan")


def pearson(xs, ys):
    pairs = [(x, y) for x, y in zip(xs, ys) if x == x and y == y]
    if len(pairs) < 3:
        return float("nan")
    n = len(pairs)
    mx, my = sum(p[0] for p in pairs) / n, sum(p[1] for p in pairs) / n
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    syy = sum((y - my) ** 2 for _, y in pairs)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")
