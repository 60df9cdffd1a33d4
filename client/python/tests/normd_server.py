"""Starts the real normd binary on a free loopback port for a test, and stops it.

The binary is $NORMD_BINARY (CTest sets it to the build's normd; tests/run_gpu.sh to the bundle's).
normd gets --listen=127.0.0.1:0 and --metrics-listen=127.0.0.1:0; the ports it got are read from
its "listening on" and "metrics on" log lines. The backend is $NORMD_TEST_BACKEND (default cpu).
Its stderr is collected by a thread, so that a chatty server never blocks on a full pipe.
"""

import os
import re
import subprocess
import threading
import time
import urllib.request

import normd

_LISTENING = re.compile(r"listening on [^ ]*:(\d+)")
_METRICS = re.compile(r"metrics on [^ ]*:(\d+)")


def normd_binary() -> str:
    path = os.environ.get("NORMD_BINARY", "")
    if not path:
        raise RuntimeError("NORMD_BINARY is not set: point it at the normd binary to test against "
                           "(CTest sets it; by hand: NORMD_BINARY=build/cpu/server/normd)")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"NORMD_BINARY={path} is not an executable file")
    return path


def test_backend() -> str:
    return os.environ.get("NORMD_TEST_BACKEND", "cpu")


class NormdServer:
    def __init__(self, *args: str, tls_ca: str = None, tls_cert: str = None,
                 tls_key: str = None):
        self.args = [f"--backend={test_backend()}", *args]
        self._tls = normd.TLS(ca_file=tls_ca, cert_file=tls_cert, key_file=tls_key) \
            if tls_ca else None
        self.port = 0
        self.metrics_port = 0
        self._log = []
        self._log_lock = threading.Lock()
        self._listening = threading.Event()
        self._process = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> "NormdServer":
        self._process = subprocess.Popen(
            [normd_binary(), "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0", *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        threading.Thread(target=self._collect, daemon=True).start()
        if not self._listening.wait(timeout) or not self.port:
            self.stop()
            raise RuntimeError(f"normd did not start listening; its log:\n{self.log()}")
        with normd.Client(self.address, tls=self._tls, wait_for_ready=True) as client:
            deadline = time.monotonic() + timeout
            while not client.health(timeout=timeout):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"normd never reported SERVING; its log:\n{self.log()}")
                time.sleep(0.01)  # polling a status, not timing a result
        return self

    def _collect(self) -> None:
        for line in self._process.stderr:
            with self._log_lock:
                self._log.append(line)
            metrics = _METRICS.search(line)
            if metrics:
                self.metrics_port = int(metrics.group(1))
            listening = _LISTENING.search(line)
            if listening:
                self.port = int(listening.group(1))
                self._listening.set()
        self._listening.set()  # exited: wake start()

    def log(self) -> str:
        with self._log_lock:
            return "".join(self._log)

    def stop(self) -> None:
        """Kills the process: these tests are about the client, and normd's own shutdown (drain,
        exit code) is tests/integration's; a SIGTERM'd normd takes about 2 s to exit."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def metric(self, name: str, **labels) -> float:
        """The value of one series on normd's /metrics (0 when absent)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=10) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            series, _, value = line.rpartition(" ")
            if all(f'{k}="{v}"' in series for k, v in labels.items()):
                return float(value)
        return 0.0

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
