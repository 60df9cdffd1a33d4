"""The package installs with pip into a fresh virtual environment that sees the system's packages
(grpcio, numpy, torch from the distribution), and imports from outside the repository."""

import os
import shutil
import subprocess
import sys
import venv

import pytest

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_install_into_a_fresh_venv(tmp_path, server):
    if not hasattr(venv, "EnvBuilder"):
        pytest.fail("this Python has no venv module (Debian: python3-venv)")
    # A copy, so that the build's leftovers (build/, *.egg-info) stay out of the checkout.
    source = tmp_path / "src"
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("tests", "bench",
                                                                    "__pycache__", "build",
                                                                    "*.egg-info"))
    environment = tmp_path / "venv"
    # --without-pip: the system's pip (seen through --system-site-packages) installs into the venv
    # as the venv's own would; copying pip in with ensurepip takes most of this test's time.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(environment)], check=True)
    python = str(environment / "bin" / "python")
    # --no-build-isolation: the build uses the setuptools that is installed instead of fetching
    # one (there is no package index here); the dependencies are the system's.
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet",
         str(source)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = (
        "import sys, numpy as np, normd, normd.aio, normd.v1.normd_pb2\n"
        "assert normd.__file__.startswith(sys.prefix), normd.__file__\n"
        f"c = normd.Client('{server.address}')\n"
        "y = c.rms_norm(np.ones((2, 8), np.float16), np.ones(8, np.float32))\n"
        "assert y.dtype == np.float16 and abs(float(y[0, 0]) - 1.0) < 1e-3\n"
        "print(normd.__file__)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([python, "-c", code], cwd=outside, env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert str(environment) in run.stdout
