"""Fixtures: one normd for the whole test run (tests that need other flags start their own) and a client
of it. The package is imported from this checkout unless NORMD_TEST_INSTALLED=1 asks for the
installed one (tests/run_gpu.sh tests what it installed)."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
if os.environ.get("NORMD_TEST_INSTALLED") != "1":
    sys.path.insert(0, os.path.dirname(_HERE))

import pytest  # noqa: E402

import normd  # noqa: E402
from normd_server import NormdServer  # noqa: E402


@pytest.fixture(scope="session")
def server():
    with NormdServer() as s:
        yield s


@pytest.fixture(scope="session")
def client(server):
    with normd.Client(server.address) as c:
        yield c
