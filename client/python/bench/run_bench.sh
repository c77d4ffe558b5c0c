#!/usr/bin/env bash
# `bazel run //client/python:python_vs_cpp_bench -- [flags]`: the benchmark
# with this build's ps_client, sdk_call_bench and ps_server (runfiles).
set -euo pipefail
R="${RUNFILES_DIR:-$0.runfiles}/ps"
export PYTHONPATH="$R/client/python"
export PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 "$R/client/python/bench/python_vs_cpp_bench.py" \
  --cpp_bench="$R/client/python/sdk_call_bench" \
  --server_bin="$R/server/ps_server" "$@"
