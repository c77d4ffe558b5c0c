#!/usr/bin/env bash
# Runs every CUDA path of the project on a GPU host, from a bundle made here
# (the host has the NVIDIA driver, the CUDA 13 toolkit and PyTorch, but none
# of our Debian libraries). Results: tests/bench/GPU_RESULTS.md.
#
# Here (the build machine):
#   tests/bench/gpu_run.sh --prepare      # builds, bundles into out/gpu_bundle
#                                          # and packs it with Fashion-MNIST
#                                          # into out/gpu_carry (~50 MB)
# On the GPU host, from a copy of the repository holding out/gpu_carry:
#   tests/bench/gpu_run.sh [LOG_DIR]       # default LOG_DIR: out/gpu_logs
#
# Each step runs under its own time limit and appends to LOG_DIR/<step>.log;
# a failed step is reported and the next one runs. Exit status: the number of
# failed steps.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
bundle="$repo/out/gpu_bundle"
carry="$repo/out/gpu_carry"
data="$carry/fashion-mnist"

targets=(
  //common/backend:update_backend_conformance_test
  //worker:model_test
  //tests:cuda_server_equivalence_test
  //tests/bench:update_bench
  //tests/bench:model_bench
  //tests/bench:transport_bench
  //server:ps_server
  //worker:ps_worker
  //deploy/launcher:ps_launch
)

if [[ ${1:-} == --prepare ]]; then
  set -e
  bash deploy/bundle_gpu.sh -o "$bundle" "${targets[@]}"
  # Debug info is of no use there and would triple the transfer.
  strip --strip-debug "$bundle"/bin/*
  rm -rf "$carry"
  mkdir -p "$data"
  # xz: the GPU host unpacks it with Python's tarfile, whatever it has.
  tar -C "$(dirname "$bundle")" -cJf "$carry/gpu_bundle.tar.xz" "$(basename "$bundle")"
  cp /usr/share/datasets/fashion-mnist/*.gz "$data/"
  du -sh "$carry"
  exit 0
fi

if [[ ! -x $bundle/run.sh ]]; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$carry/gpu_bundle.tar.xz" "$(dirname "$bundle")" || exit 100
fi

logs="$(mkdir -p "${1:-out/gpu_logs}" && cd "${1:-out/gpu_logs}" && pwd)"
run="$bundle/run.sh"
failed=0

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in NAME.log
# (and on stdout), under `timeout`.
step() {
  local name=$1 limit=$2
  shift 2
  echo "=== $name: $*" | tee -a "$logs/$name.log"
  local start=$SECONDS
  timeout --signal=INT --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$logs/$name.log"
  ((rc == 0)) || failed=$((failed + 1))
}

# run.sh finds the host's cuBLAS in the usual places; where it does not, look
# everywhere once (the binaries cannot load without it).
if ! "$run" model_test --gtest_list_tests >/dev/null 2>&1; then
  found="$(find / -xdev -name 'libcublas.so.13' -not -path "$repo/*" 2>/dev/null | head -1)"
  echo "gpu_run: run.sh found no cuBLAS; using ${found:-nothing found}"
  [[ -n $found ]] && export LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

step env 30 sh -c 'nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv;
  nvcc --version | tail -2; python3 -c "import torch; print(\"torch\", torch.__version__, torch.version.cuda)";
  nproc; grep MemTotal /proc/meminfo; uname -r; ldconfig -p | grep -E "libcublas|libcudart"'

# The conformance suite, the CPU-vs-CUDA model test and the CUDA-backed
# servers against CPU-backed ones (the harness finds ps_server through a
# runfiles-like tree; the servers inherit run.sh's library path).
runfiles="$(mktemp -d)"
mkdir -p "$runfiles/ps/server"
ln -s "$bundle/bin/ps_server" "$runfiles/ps/server/ps_server"
step conformance 90 "$run" update_backend_conformance_test
step model_test 45 "$run" model_test
step server_equivalence 120 env TEST_SRCDIR="$runfiles" TEST_TMPDIR="$(mktemp -d)" \
  "$run" cuda_server_equivalence_test

# Update throughput against the device-to-device copy, 1M-256M elements.
step update_bench 120 "$run" update_bench --backends=cuda --sizes=1M,4M,16M,64M,256M

# The worker's cuBLAS step against PyTorch's on the same GPU (PyTorch runs
# with the host's own libraries: no bundle on its path).
step model_bench 60 "$run" model_bench --devices=cuda,cpu
step torch_mlp_step 90 env -u LD_LIBRARY_PATH python3 tests/bench/torch_mlp_step.py --ours="$logs/model_bench.log"

# The main job with CUDA servers and CUDA workers.
step main_job 150 "$run" ps_launch --server_bin="$bundle/bin/ps_server" \
  --worker_bin="$bundle/bin/ps_worker" --progress=plain --out_dir="$logs" \
  --set="server.device=cuda,training.device=cuda,training.data_dir=$data"

# Push / pull through a CUDA-backed server next to a CPU-backed one.
step transport_bench 200 "$run" transport_bench --server_bin="$bundle/bin/ps_server" \
  --server_devices=cpu,cuda --configs=1x1,2x2 --quick \
  --json_out="$logs/transport_bench.json"

echo "gpu_run: $failed step(s) failed; logs in $logs"
exit "$failed"
