"""A TCP relay on loopback that holds each new connection for a while before it connects it to the
real server: a server slow to answer a new connection (busy, remote, behind a slow TLS terminator),
for tests of how long a client waits for one.

    with DelayingProxy(server.port, delay=1.0) as proxy:
        normd.Client(proxy.target)  # each connection's first byte arrives after 1 s
"""

import select
import socket
import threading

_POLL_SECONDS = 0.05  # how often blocked loops look at the stop flag


class DelayingProxy:
    def __init__(self, upstream_port: int, delay: float):
        self._upstream_port = upstream_port
        self._delay = delay
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_SECONDS)
        self.port = self._listener.getsockname()[1]
        self.target = f"127.0.0.1:{self.port}"
        self._relays = []  # added to by the acceptor only; joined after it
        self._acceptor = threading.Thread(target=self._accept_loop, daemon=True)
        self._acceptor.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._stopping.set()
        self._acceptor.join()
        for relay in self._relays:
            relay.join()
        self._listener.close()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            relay = threading.Thread(target=self._relay, args=(client,), daemon=True)
            self._relays.append(relay)
            relay.start()

    def _relay(self, client: socket.socket) -> None:
        # The delay: nothing is read from the client nor sent to it, as by a server that has
        # accepted the connection but not yet got to it.
        if self._stopping.wait(self._delay):
            client.close()
            return
        with client, socket.create_connection(("127.0.0.1", self._upstream_port)) as server:
            peers = {client: server, server: client}
            while not self._stopping.is_set():
                readable, _, _ = select.select(list(peers), [], [], _POLL_SECONDS)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
