#!/usr/bin/env bash
# Installs the C++ client SDK for builds outside Bazel:
#   bash client/sdk/install.sh [--prefix DIR] [bazel flags...]
# (default prefix /usr/local). Builds //client/sdk:sdk with Bazel and unpacks
# it: DIR/include/{client,common}/*.h, DIR/lib/libps_client.{a,so,so.0},
# DIR/lib/pkgconfig/ps_client{,_static}.pc and
# DIR/lib/cmake/ps_client/ps_clientConfig{,Version}.cmake. Rerunning
# replaces the files. See client/sdk/README.md (ABI constraint).
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
prefix=/usr/local
if [[ "${1:-}" == "--prefix" ]]; then
  prefix=${2:?--prefix needs a directory}
  shift 2
elif [[ "${1:-}" == --prefix=* ]]; then
  prefix=${1#--prefix=}
  shift
fi
cd "$REPO_ROOT"
bazel build --noshow_progress --ui_event_filters=-info "$@" //client/sdk:sdk >&2
mkdir -p "$prefix"
tar -C "$prefix" --no-same-owner -xf bazel-bin/client/sdk/ps_client_sdk.tar
# The dynamic loader finds libps_client.so.0 in /usr/local/lib only through
# its cache.
if [[ $(id -u) -eq 0 && ( "$prefix" == /usr/local || "$prefix" == /usr ) ]]; then
  ldconfig
fi
echo "ps_client SDK installed under $prefix" >&2
