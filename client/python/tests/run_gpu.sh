#!/usr/bin/env bash
# The Python client's tests on a GPU machine: normd --backend=cuda from a bundle of the build (a
# folder holding its bin/ and lib/ with an env.sh that puts them on PATH and LD_LIBRARY_PATH), the
# package installed from this checkout into a scratch directory (so
# that the installed package is what is tested), and pytest with torch CUDA tensors
# (tests/test_gpu.py: float32, float16, bfloat16, with and without a residual, against the fp64
# reference on the CPU, the result still on the GPU) plus the rest of the suite on the CUDA backend,
# numpy bfloat16 through ml_dtypes included where it is installed. The venv test is left out: a venv
# made from a venv's python does not see that venv's packages.
#
#   client/python/tests/run_gpu.sh BUNDLE_DIR [OUT_DIR] [pytest arguments...]
#
# BUNDLE_DIR holds env.sh and bin/normd. OUT_DIR (default $OUT, else a temporary directory) gets
# versions.txt, pytest.log and normd-junit.xml. Needs python3 with grpcio, numpy, torch (CUDA),
# pytest, pip and setuptools; protobuf for the generated classes' tests.
set -euo pipefail
bundle=$(cd "${1:?usage: run_gpu.sh BUNDLE_DIR [OUT_DIR] [pytest arguments...]}" && pwd)
out=${2:-${OUT:-$(mktemp -d)}}
shift $(( $# >= 2 ? 2 : 1 ))
mkdir -p "$out"
package=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
[[ -x $bundle/bin/normd ]] || { echo "run_gpu.sh: no bin/normd in $bundle" >&2; exit 2; }

"$python" - > "$out/versions.txt" <<'EOF'
import sys, importlib
print("python", sys.version.split()[0])
for name in ("grpc", "google.protobuf", "numpy", "torch", "ml_dtypes", "pytest"):
    try:
        print(name, importlib.import_module(name).__version__)
    except ImportError as e:
        print(name, "missing:", e)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
try:
    from google.protobuf.internal import api_implementation
    print("protobuf implementation", api_implementation.Type())
except ImportError:
    pass
EOF
cat "$out/versions.txt"

# Install from a copy: the build's leftovers (build/, *.egg-info) stay out of the checkout.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
cp -r "$package/normd" "$package/pyproject.toml" "$package/README.md" "$work/src/"
"$python" -m pip install --quiet --no-build-isolation --no-deps --no-index --target "$work/site" \
  "$work/src"

# normd runs through a wrapper that loads the bundle's libraries for it alone: in the tests' own
# environment they would shadow the machine's (protoc, run by test_wire, needs the system's
# libstdc++).
cat > "$work/normd" <<WRAPPER
#!/usr/bin/env bash
source "$bundle/env.sh"
exec "$bundle/bin/normd" "\$@"
WRAPPER
chmod +x "$work/normd"
normd_bin=$work/normd

export PYTHONPATH="$work/site" NORMD_TEST_INSTALLED=1 NORMD_BINARY="$normd_bin" \
  NORMD_TEST_BACKEND="${NORMD_TEST_BACKEND:-cuda}" PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
cd "$work"  # not the checkout: `python -m` puts the current directory first on sys.path
"$python" -c 'import normd; print("testing", normd.__file__)' | tee -a "$out/versions.txt"
set -o pipefail
"$python" -m pytest -p no:cacheprovider -rs -v --ignore="$package/tests/test_install.py" \
  --junitxml="$out/normd-junit.xml" "$@" "$package/tests" 2>&1 | tee "$out/pytest.log"
