#!/usr/bin/env bash
# The installed C++ SDK works outside Bazel: unpacks the SDK tar (what
# install.sh installs) under a temp prefix, builds the CMake example
# (example/) against it with the shared and with the static library, and a
# plain g++ build through pkg-config, then trains with each against two live
# ps_server processes (OS-picked ports) and two workers in sync mode. Also:
# the headers hold nothing of the worker, and a machine with other library
# versions is refused by find_package.
set -euo pipefail
R="${TEST_SRCDIR:?run me with bazel test}/ps"
T="$TEST_TMPDIR"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

prefix="$T/prefix"
mkdir -p "$prefix"
tar -C "$prefix" -xf "$R/client/sdk/ps_client_sdk.tar"
# The public headers must not drag in the built-in worker (its headers or
# its training settings) or generated protocol code.
forbidden="$(find "$prefix/include" -path '*worker*' -o -name '*.pb.h')"
if [[ -n $forbidden ]] ||
   grep -rq TrainingConfig "$prefix/include"; then
  echo "FAIL: SDK headers include the worker's or protobuf headers" >&2
  find "$prefix/include" >&2
  exit 1
fi

example="$T/example"
cp -r "$R/client/sdk/example" "$example"  # cmake wants a writable tree
chmod -R u+w "$example"
for kind in shared static; do
  static=OFF
  [[ $kind == static ]] && static=ON
  cmake -S "$example" -B "$T/build-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
    -DPS_CLIENT_STATIC=$static -DCMAKE_BUILD_TYPE=Release >"$T/cmake-$kind.log" ||
    { cat "$T/cmake-$kind.log" >&2; exit 1; }
  cmake --build "$T/build-$kind" -j 2 >>"$T/cmake-$kind.log" 2>&1 ||
    { cat "$T/cmake-$kind.log" >&2; exit 1; }
done
# A machine with another gRPC is refused at configure time, naming it.
cp -r "$prefix" "$T/other_prefix"
sed -i 's/^set(_ps_client_versions [^;]*;/set(_ps_client_versions 0.0.1;/' \
  "$T/other_prefix/lib/cmake/ps_client/ps_clientConfig.cmake"
if cmake -S "$example" -B "$T/build-other" -DCMAKE_PREFIX_PATH="$T/other_prefix" \
     >"$T/cmake-other.log" 2>&1; then
  echo "FAIL: configured against a gRPC of another version" >&2
  exit 1
fi
grep -q "grpc++ 0.0.1 (here: " "$T/cmake-other.log" ||
  { cat "$T/cmake-other.log" >&2; exit 1; }

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
g++ -O1 -o "$T/train_linear-pc" "$example/train_linear.cc" \
  $(pkg-config --cflags --libs ps_client)
# ldd's output is captured first: `ldd | grep -q` under pipefail fails at
# random when grep exits at its first match and ldd gets SIGPIPE.
static_libs="$(ldd "$T/build-static/train_linear")"
if grep -q libps_client <<<"$static_libs"; then
  echo "FAIL: the static build links libps_client.so" >&2
  exit 1
fi
shared_libs="$(ldd "$T/build-shared/train_linear")"
grep -q "$prefix/lib/libps_client.so.0" <<<"$shared_libs" ||
  { echo "FAIL: the shared build does not use the SDK's .so:" >&2
    echo "$shared_libs" >&2; exit 1; }

cat >"$T/cluster.yaml" <<'YAML'
cluster:
  servers: ["127.0.0.1:1", "127.0.0.1:2"]
  num_workers: 2
tables:
  - name: linear
    kind: dense
    size: 8
    consistency: sync
    initializer: {type: zeros}
    optimizer: {type: sgd, learning_rate: 0.1}
YAML

run_cluster_and_train() {  # BINARY
  local servers="" i
  pids=()
  for i in 0 1; do
    rm -f "$T/port_$i"
    "$R/server/ps_server" --config="$T/cluster.yaml" --index=$i \
      --listen=127.0.0.1:0 --port_file="$T/port_$i" >"$T/server_$i.log" 2>&1 &
    pids+=($!)
  done
  for i in 0 1; do
    for _ in $(seq 1 1500); do [[ -s "$T/port_$i" ]] && break; sleep 0.02; done
    [[ -s "$T/port_$i" ]] || { cat "$T/server_$i.log" >&2; return 1; }
    servers+="${servers:+,}127.0.0.1:$(cat "$T/port_$i")"
  done
  local workers=()
  for i in 0 1; do
    PS_WORKER_INDEX=$i "$1" --servers="$servers" --steps=300 \
      >"$T/worker_$i.log" 2>&1 &
    workers+=($!)
  done
  local rc=0
  for i in 0 1; do
    wait "${workers[$i]}" || rc=1
    cat "$T/worker_$i.log"
  done
  cleanup
  pids=()
  return $rc
}

for binary in "$T/build-shared/train_linear" "$T/build-static/train_linear" \
              "$T/train_linear-pc"; do
  echo "== $binary"
  run_cluster_and_train "$binary"
  grep -q "^FINAL worker=0 steps=300 max_weight_error=0.000" "$T/worker_0.log"
done
echo "PASS"
