#!/usr/bin/env bash
# The main job: trains the embedded default (deploy/examples/fashion_mnist.yaml:
# 2 servers, 2 workers, MLP, sync) on a local cluster. Extra arguments go to
# ps_launch (e.g. --config my.yaml, or --worker_cmd '...' for another trainer,
# as the README's CTR job).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bazel build "${BAZEL_FLAGS[@]}" //deploy/launcher:ps_launch //server:ps_server //worker:ps_worker
# ps_worker is the default trainer; ps_launch refuses it next to --worker_cmd.
worker=(--worker_bin="$REPO_ROOT/bazel-bin/worker/ps_worker")
for arg in "$@"; do
  if [[ $arg == --worker_cmd || $arg == --worker_cmd=* ]]; then worker=(); fi
done
exec bazel-bin/deploy/launcher/ps_launch \
  --server_bin="$REPO_ROOT/bazel-bin/server/ps_server" "${worker[@]}" "$@"
