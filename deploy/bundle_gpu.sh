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
# The bundle holds the binaries plus every shared library `ldd` lists for
# them, except glibc's own (libc, libm, libpthread, libdl, librt, ld-linux,
# ...) and the NVIDIA driver's (libcuda.so, libnvidia-*), which must come
# from the target host. Each library is stored under the name the binary
# asks for (its soname), so the loader finds it through LD_LIBRARY_PATH.
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

# glibc and the NVIDIA driver stay on the target host.
is_host_library() {
  case "$1" in
    linux-vdso.so*|linux-gate.so*|ld-linux*.so*|ld64.so*) return 0 ;;
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*) return 0 ;;
    libresolv.so*|libanl.so*|libmvec.so*|libnss_*.so*|libBrokenLocale.so*) return 0 ;;
    libthread_db.so*|libc_malloc_debug.so*) return 0 ;;
    libcuda.so*|libnvidia-*.so*) return 0 ;;
  esac
  return 1
}

rm -rf "$out"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
: >"$out/BINARIES"

declare -A copied=()
for bin in "${binaries[@]}"; do
  [[ -x "$bin" ]] || { echo "bundle_gpu: $bin was not built" >&2; exit 1; }
  name="$(basename "$bin")"
  cp -L "$bin" "$out/$name"
  chmod u+w,a+rx "$out/$name"
  echo "$name" >>"$out/BINARIES"
  # ldd lines: "soname => /path (addr)", "soname => not found", "/path (addr)".
  while read -r line; do
    [[ -z "$line" ]] && continue
    if [[ "$line" == *"=> not found"* ]]; then
      echo "bundle_gpu: $name needs ${line%% *}, which ldd cannot find" >&2
      exit 1
    fi
    if [[ "$line" == *" => "* ]]; then
      soname="${line%% => *}"
      path="${line#* => }"
      path="${path%% (*}"
    else
      path="${line%% (*}"
      soname="$(basename "$path")"
    fi
    soname="$(basename "$soname")"
    [[ -z "$path" || "$path" != /* ]] && continue
    is_host_library "$soname" && continue
    [[ -n "${copied[$soname]:-}" ]] && continue
    cp -L "$path" "$out/$soname"
    chmod u+w "$out/$soname"
    copied[$soname]="$path"
  done < <(ldd "$bin")
done

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
LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$here/$bin" "$@"
RUN
chmod +x "$out/run.sh"

echo "bundle_gpu: $out: $(wc -l <"$out/BINARIES") binaries, ${#copied[@]} libraries" >&2
for soname in "${!copied[@]}"; do echo "  $soname <- ${copied[$soname]}" >&2; done | sort >&2
