"""What GetServerInfo tells about a normd: its version, backend, devices and limits."""

import dataclasses
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class Device:
    name: str
    memory_bytes: int
    kind: str  # "cpu" or "cuda"


@dataclasses.dataclass(frozen=True)
class ServerInfo:
    version: str
    backend: str  # "cpu" or "cuda"
    devices: Tuple[Device, ...]
    max_hidden: int
    max_request_bytes: int
    max_batch_rows: int
    max_queue_delay_us: int

    @classmethod
    def from_fields(cls, fields: dict) -> "ServerInfo":
        devices = tuple(Device(**d) for d in fields["devices"])
        return cls(**{**fields, "devices": devices})
