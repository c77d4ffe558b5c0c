#!/usr/bin/env bash
# Makes a self-contained bundle of the project's binaries: OUT/bin/<binary>
# plus every shared library they load (as `ldd` resolves them on this
# machine) in OUT/lib, so they run on a host or image without Debian's
# packages: LD_LIBRARY_PATH=OUT/lib OUT/bin/ps_server ...
#
# Usage: bundle.sh [--system-cxx] [--no-cuda-libs | --no-cublas] OUT BINARY...
#   --system-cxx    leave out libstdc++ and libgcc_s (the target has a C++
#                   runtime at least as new as this machine's; the container
#                   images do).
#   --no-cuda-libs  leave out the CUDA toolkit libraries (cudart, cuBLAS,
#                   NCCL...), which the nvidia/cuda runtime image provides.
#   --no-cublas     leave out cuBLAS alone (libcublas, libcublasLt: 600 MB),
#                   which every host with the CUDA toolkit has; the rest of
#                   the CUDA runtime (cudart) is bundled.
# glibc (libc, libm, libpthread, libdl, librt, the loader) is never bundled:
# it must come from the target, which must be at least as new as the build
# machine's (Debian 12: glibc 2.36). The GPU driver (libcuda.so) is never
# bundled either: it comes from the host's driver.
# Exits non-zero when a library cannot be resolved ("not found" in ldd).
set -euo pipefail

system_cxx=0
cuda_libs=1
cublas=1
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --system-cxx) system_cxx=1 ;;
    --no-cuda-libs) cuda_libs=0 ;;
    --no-cublas) cublas=0 ;;
    *) echo "bundle.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ $# -lt 2 ]]; then
  echo "usage: bundle.sh [--system-cxx] [--no-cuda-libs | --no-cublas] OUT BINARY..." >&2
  exit 2
fi
out=$1
shift
mkdir -p "$out/bin" "$out/lib"

skip_re='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libcuda|libnvidia-)[.-]'
if ((system_cxx)); then skip_re+='|^(libstdc\+\+|libgcc_s)\.'; fi
if ((!cuda_libs)); then
  skip_re+='|^(libcudart|libcublas|libcublasLt|libnccl|libcusparse|libcufft|libcurand|libnvrtc|libnvJitLink)\.'
fi
if ((!cublas)); then skip_re+='|^(libcublas|libcublasLt)\.'; fi

for bin in "$@"; do
  install -m 0755 "$(readlink -f "$bin")" "$out/bin/$(basename "$bin")"
  # Unresolved libraries are an error unless the target provides them (the
  # driver's libcuda.so.1 is never on a build machine).
  missing=$(ldd "$bin" | awk '$2 == "=>" && $3 == "not" {print $1}' |
    { grep -Ev "$skip_re" || true; })
  if [[ -n $missing ]]; then
    echo "bundle.sh: $bin has unresolved libraries:" $missing >&2
    exit 1
  fi
  # Lines look like "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)".
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r soname path; do
      if [[ $soname =~ $skip_re ]]; then continue; fi
      # Copy the file under its soname (the name the loader looks for),
      # following the alternatives/version symlinks.
      if [[ ! -e $out/lib/$soname ]]; then
        install -m 0644 "$(readlink -f "$path")" "$out/lib/$soname"
      fi
    done
done
echo "bundle.sh: $(ls "$out/bin" | wc -l) binaries, $(ls "$out/lib" | wc -l) libraries in $out" >&2
