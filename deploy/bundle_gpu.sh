#!/usr/bin/env bash
# Makes a self-contained bundle of project binaries for a GPU host that has
# the NVIDIA driver but none of the Debian libraries we build against.
#
# Usage:
#   deploy/bundle_gpu.sh [-o OUT_DIR] TARGET_OR_BINARY...
#     TARGET_OR_BINARY  a Bazel label (//pkg:name; built first with
#                       `bazel build $BUNDLE_BAZEL_FLAGS <labels>`) or the
#                       path of an already built executable.
#     -o OUT_DIR        bundle folder (default: out/gpu_bundle); replaced.
#
# The bundle holds the binaries (OUT_DIR/bin) plus every shared library `ldd` lists for
# them (OUT_DIR/lib), except glibc's own (libc, libm, libpthread, libdl, librt, ld-linux,
# ...) and the NVIDIA driver's (libcuda.so, libnvidia-*), which must come
# from the target host, and cuBLAS (libcublas, libcublasLt: 600 MB, more than
# a GPU host's transfer limit), which run.sh takes from the host's CUDA 13
# toolkit or its PyTorch's nvidia-cublas package.
#
# Run a bundled binary with:
#   OUT_DIR/run.sh BINARY [ARGS...]   (BINARY may be omitted when the bundle
#                                      holds a single binary)
# run.sh puts OUT_DIR first on LD_LIBRARY_PATH (which takes precedence over
# the binaries' RUNPATH) and execs the binary.
set -euo pipefail

usage() {
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

out="out/gpu_bundle"
args=()
while (($#)); do
  case "$1" in
    -o) [[ $# -ge 2 ]] || usage; out="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) args+=("$1"); shift ;;
  esac
done
((${#args[@]})) || usage

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Resolve labels to bazel-bin paths (building them) and check plain paths.
labels=()
binaries=()
for a in "${args[@]}"; do
  if [[ "$a" == //* ]]; then
    labels+=("$a")
    pkg="${a#//}"
    if [[ "$pkg" == *:* ]]; then
      name="${pkg##*:}"
      pkg="${pkg%%:*}"
    else
      name="${pkg##*/}"
    fi
    binaries+=("$repo_root/bazel-bin/$pkg/$name")
  else
    [[ -f "$a" && -x "$a" ]] || { echo "bundle_gpu: $a is not an executable file" >&2; exit 1; }
    binaries+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")")
  fi
done
if ((${#labels[@]})); then
  # shellcheck disable=SC2086  # BUNDLE_BAZEL_FLAGS is a list of flags.
  (cd "$repo_root" && bazel build ${BUNDLE_BAZEL_FLAGS:-} "${labels[@]}")
fi

rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
for bin in "${binaries[@]}"; do
  [[ -x "$bin" ]] || { echo "bundle_gpu: $bin was not built" >&2; exit 1; }
done
# The library collection (ldd, leaving out glibc and the NVIDIA driver) is
# deploy/docker/bundle.sh's, shared with the container image: OUT/bin, OUT/lib.
bash "$repo_root/deploy/docker/bundle.sh" --no-cublas "$out" "${binaries[@]}"
for bin in "${binaries[@]}"; do basename "$bin"; done >"$out/BINARIES"

cat >"$out/run.sh" <<'RUN'
#!/bin/sh
# Runs a binary of this bundle with the bundled shared libraries:
#   run.sh BINARY [ARGS...]    (BINARY may be omitted for a one-binary bundle)
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -ge 1 ] && grep -qx -- "$1" "$here/BINARIES"; then
  bin="$1"
  shift
elif [ "$(wc -l <"$here/BINARIES")" -eq 1 ]; then
  bin="$(cat "$here/BINARIES")"
else
  echo "usage: $0 BINARY [ARGS...]; BINARY is one of:" >&2
  sed 's/^/  /' "$here/BINARIES" >&2
  exit 2
fi
# cuBLAS is the host's (not bundled): the loader's cache, else the CUDA
# toolkit's folders, else a Python environment's nvidia-cublas wheel.
cublas=""
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13 '; then
  for dir in "${CUDA_PATH:-/usr/local/cuda}/lib64" \
             "${CUDA_PATH:-/usr/local/cuda}/targets/x86_64-linux/lib" \
             /usr/local/cuda-13*/lib64 \
             /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
             /opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib \
             /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib \
             /usr/local/lib/python3*/dist-packages/nvidia/cublas/lib; do
    if [ -e "$dir/libcublas.so.13" ]; then cublas="$dir"; break; fi
  done
fi
LD_LIBRARY_PATH="$here/lib${cublas:+:$cublas}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$here/bin/$bin" "$@"
RUN
chmod +x "$out/run.sh"

echo "bundle_gpu: $out: $(wc -l <"$out/BINARIES") binaries, $(ls "$out/lib" | wc -l) libraries" >&2
