# Sourced by the .ci scripts: installs dependencies and picks the Bazel config.
# Sets BAZEL_FLAGS (array) for `bazel build/test/run`.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

bash "$REPO_ROOT/.ci/install_deps.sh"

BAZEL_FLAGS=()
CUDA_ROOT="${CUDA_PATH:-/usr/local/cuda}"
if [[ -x "$CUDA_ROOT/bin/nvcc" ]]; then
  echo "setup: nvcc found at $CUDA_ROOT/bin/nvcc: building the CUDA backend too" >&2
else
  echo "setup: nvcc not found at $CUDA_ROOT/bin/nvcc (set CUDA_PATH to use another" \
       "toolkit): building CPU-only (--config=cpu); device: cuda will be refused" >&2
  BAZEL_FLAGS+=(--config=cpu)
fi

# npm packages (kubernetes-models, typescript) and kubectl for the manifest
# checks; a no-op when tests/k8s/node_modules already matches its lock file.
bash "$REPO_ROOT/tests/k8s/setup.sh" >&2

# The Python client (ps_client) for /usr/bin/python3, built here from Debian
# packages only; a no-op when this build is already installed. A failure is
# reported but does not stop the C++ build and tests (the Python test
# targets then fail on their own, counted).
bash "$REPO_ROOT/client/python/install.sh" "${BAZEL_FLAGS[@]}" ||
  echo "setup: installing ps_client for /usr/bin/python3 failed (above)" >&2
