"""The channel: round_robin over several normd, dns:/// targets, the service config, TLS and mTLS,
and how long a new connection is waited for."""

import json
import os
import subprocess
import time

import numpy as np
import pytest

import normd
from normd import _channel
from delaying_proxy import DelayingProxy
from normd_server import NormdServer

X = np.ones((1, 64), np.float32)
W = np.ones(64, np.float32)


def normalize_count(server) -> float:
    return server.metric("normd_requests_total", method="Normalize", code="OK")


def info_count(server) -> float:
    return server.metric("normd_requests_total", method="GetServerInfo", code="OK")


def until_both_are_picked(client, servers) -> None:
    """Calls until round_robin has used both servers: both connections are then ready, and calls
    alternate from here on (a connection still being made is skipped, not waited for)."""
    before = [info_count(s) for s in servers]
    for _ in range(2000):
        client.server_info()
        if all(info_count(s) > b for s, b in zip(servers, before)):
            return
    pytest.fail("round_robin never picked both servers in 2000 calls")


@pytest.fixture(scope="module")
def two_servers():
    with NormdServer() as first, NormdServer() as second:
        yield first, second


def test_round_robin_over_every_address(two_servers):
    first, second = two_servers
    target = f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}"
    with normd.Client(target, own_connection=True, cache_weights=False) as client:
        until_both_are_picked(client, two_servers)
        before = [normalize_count(s) for s in two_servers]
        for _ in range(40):
            client.rms_norm(X, W)
    counts = [normalize_count(s) - b for s, b in zip(two_servers, before)]
    # round_robin takes ready subchannels in turn: neither can have been left out.
    assert min(counts) >= 10 and sum(counts) == 40, counts


def test_registered_weight_across_replicas(two_servers):
    # A weight registered on one replica is NOT_FOUND on the other; with two replicas in turn the
    # registration and its retry always land on different ones, so after one round of that the
    # client sends this weight inline: correct results, and no NOT_FOUND on every call.
    first, second = two_servers
    target = f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}"
    rng = np.random.default_rng(1)
    w = rng.uniform(0.5, 1.5, 64).astype(np.float32)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    expected = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
    with normd.Client(target, own_connection=True) as client:
        until_both_are_picked(client, two_servers)
        for _ in range(20):
            assert np.allclose(client.rms_norm(x, w), expected, rtol=1e-5, atol=1e-5)
    not_found = sum(s.metric("normd_requests_total", method="Normalize", code="NOT_FOUND")
                    for s in two_servers)
    assert 1 <= not_found <= 2


def test_dns_target(server):
    with normd.Client(f"dns:///localhost:{server.port}") as client:
        assert client.health()
        assert np.allclose(client.rms_norm(X, W), 1.0, atol=1e-5)


def test_a_server_slow_to_answer_a_new_connection_is_waited_for(server):
    # One second: longer than the 100 ms reconnect backoff, far shorter than connect_timeout's
    # default. One attempt, so that no retry hides a connection attempt given up.
    with DelayingProxy(server.port, delay=1.0) as proxy, \
            normd.Client(proxy.target, own_connection=True, max_attempts=1) as client:
        assert np.allclose(client.rms_norm(X, W), 1.0, atol=1e-5)


def test_a_connection_slower_than_connect_timeout_is_given_up(server):
    delay = 5.0
    with DelayingProxy(server.port, delay=delay) as proxy, \
            normd.Client(proxy.target, own_connection=True, max_attempts=1, connect_timeout=0.3,
                         max_request_bytes=1 << 20) as client:
        start = time.monotonic()
        with pytest.raises(normd.Unavailable):
            client.rms_norm(X, W)
        assert time.monotonic() - start < delay, "the call waited for the slow connection"


def test_connect_timeout_under_a_tenth_of_a_second_is_refused():
    with pytest.raises(ValueError, match=r"connect_timeout: 0.05; must be at least 0.1"):
        normd.Client("127.0.0.1:1", connect_timeout=0.05)


def test_service_config_retries_unary_methods_only():
    config = _channel.service_config(_channel.Options(max_attempts=9, initial_backoff=0.05))
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    (method,) = config["methodConfig"]
    names = {(n["service"], n["method"]) for n in method["name"]}
    assert ("normd.v1.Normalizer", "Normalize") in names
    assert ("normd.v1.Normalizer", "NormalizeStream") not in names
    assert method["retryPolicy"]["maxAttempts"] == 5  # gRPC's cap
    assert method["retryPolicy"]["initialBackoff"] == "0.050s"
    assert set(method["retryPolicy"]["retryableStatusCodes"]) == {"UNAVAILABLE", "CANCELLED"}
    assert "retryPolicy" not in _channel.service_config(
        _channel.Options(max_attempts=1))["methodConfig"][0]
    arguments = dict(_channel.channel_arguments(_channel.Options()))
    assert json.loads(arguments["grpc.service_config"]) == _channel.service_config(
        _channel.Options())
    assert arguments["grpc.max_receive_message_length"] == -1


def make_pki(directory) -> None:
    """A CA with a server certificate for 127.0.0.1 and a client certificate, and a second CA with
    a client certificate of its own ("stranger"), as tests/integration/test_pki does."""
    script = r"""set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem -days 1 -subj /CN=$1 \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; }
sign() { key $1.key; openssl req -new -key $1.key -out $1.csr -subj /CN=$1; printf '%s\n' "$3" > $1.ext
  openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days 1 \
    -extfile $1.ext 2>/dev/null; }
ca ca; ca other-ca
sign server ca 'subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth'
sign client ca 'extendedKeyUsage=clientAuth'
sign stranger other-ca 'extendedKeyUsage=clientAuth'
"""
    subprocess.run(["bash", "-c", script], cwd=directory, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    try:
        make_pki(directory)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"openssl could not make the test certificates: {e}")
    return lambda name: os.path.join(directory, name)


def test_tls(pki):
    with NormdServer(f"--tls-cert={pki('server.pem')}", f"--tls-key={pki('server.key')}",
                     tls_ca=pki("ca.pem")) as server:
        with normd.Client(server.address, tls=normd.TLS(ca_file=pki("ca.pem"))) as client:
            assert np.allclose(client.rms_norm(X, W), 1.0, atol=1e-5)
        with normd.Client(server.address, tls=normd.TLS(ca_file=pki("other-ca.pem")),
                          max_attempts=1, timeout=10) as client:
            with pytest.raises(normd.Unavailable):
                client.rms_norm(X, W)  # the server's certificate is not from this CA
        with normd.Client(server.address, max_attempts=1, timeout=10) as client:
            with pytest.raises(normd.Unavailable):
                client.rms_norm(X, W)  # plaintext towards TLS


def test_mutual_tls(pki):
    with NormdServer(f"--tls-cert={pki('server.pem')}", f"--tls-key={pki('server.key')}",
                     f"--tls-client-ca={pki('ca.pem')}", tls_ca=pki("ca.pem"),
                     tls_cert=pki("client.pem"), tls_key=pki("client.key")) as server:
        ok = normd.TLS(ca_file=pki("ca.pem"), cert_file=pki("client.pem"),
                       key_file=pki("client.key"))
        with normd.Client(server.address, tls=ok) as client:
            assert np.allclose(client.rms_norm(X, W), 1.0, atol=1e-5)
        for refused in (normd.TLS(ca_file=pki("ca.pem")),
                        normd.TLS(ca_file=pki("ca.pem"), cert_file=pki("stranger.pem"),
                                  key_file=pki("stranger.key"))):
            with normd.Client(server.address, tls=refused, max_attempts=1, timeout=10) as client:
                with pytest.raises(normd.Unavailable):
                    client.rms_norm(X, W)


def test_tls_option_errors(pki, tmp_path):
    with pytest.raises(ValueError, match="needs its key"):
        normd.Client("127.0.0.1:1", tls=normd.TLS(cert_file=pki("client.pem")))
    with pytest.raises(ValueError, match="cannot read"):
        normd.Client("127.0.0.1:1", tls=normd.TLS(ca_file=str(tmp_path / "missing.pem")))
    empty = tmp_path / "empty.pem"
    empty.write_text("not a certificate")
    with pytest.raises(ValueError, match="no PEM block"):
        normd.Client("127.0.0.1:1", tls=normd.TLS(ca_file=str(empty)))
