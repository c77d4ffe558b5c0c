#!/usr/bin/env bash
# Installs every Debian package the project needs. Idempotent and non-interactive:
# packages already present are skipped, so a warm machine pays only a dpkg query.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java
  build-essential clang libclang-rt-14-dev pkg-config
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev zlib1g-dev
  prometheus-cpp-dev prometheus
  dataset-fashion-mnist
  libxxhash-dev openssl iperf3 gnuplot-nox yamllint
  curl jq python3-pytest
  iproute2 nftables  # tests/netns: namespaces, tc, partitions
  etcd-server etcd-client  # replication: roles, terms, leases (server/replication)
  valgrind linux-perf  # tests/bench/profile_pull.py: instructions, syscalls per operation
  # Python client (client/python) and its tests; C++ SDK example (cmake)
  python3-dev pybind11-dev python3-pip python3-setuptools python3-wheel
  python3-numpy python3-torch python3-yaml cmake
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
