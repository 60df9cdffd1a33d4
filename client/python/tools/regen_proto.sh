#!/usr/bin/env bash
# Regenerates normd/v1/normd_pb2.py from proto/normd/v1/normd.proto with protoc (3.20 or later:
# its code uses protobuf's builder module, which runtimes 3.20 through 6.x provide).
# tests/test_wire.py checks that the committed file matches the proto.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
protoc --proto_path="$here/../../proto" --python_out="$here" normd/v1/normd.proto
echo "regenerated $here/normd/v1/normd_pb2.py with $(protoc --version)"
