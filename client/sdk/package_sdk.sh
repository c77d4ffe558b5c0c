#!/usr/bin/env bash
# The action of ps_sdk (sdk.bzl): assembles the SDK tree and tars it.
# Usage: package_sdk.sh OUT_TAR BIN_DIR PC_IN PC_STATIC_IN CMAKE_IN
#          CMAKE_VERSION_IN VERSION ROOT,ROOT,... ARCHIVE...
set -euo pipefail
out=$1 bin_dir=$2 pc_in=$3 pc_static_in=$4 cmake_in=$5 cmake_version_in=$6
version=$7 roots=$8
shift 8

# The Debian libraries the SDK links (pkg-config names): one list for the
# shared library's link line, ps_client_static.pc and the CMake package,
# each pinned to the version installed here (the ABI constraint).
DEPS=(grpc++ protobuf absl_status absl_statusor absl_synchronization
      absl_time absl_strings absl_str_format absl_hash absl_raw_hash_set
      spdlog yaml-cpp libxxhash)
# What the public header's Abseil types need from a program linking the
# shared library.
PUBLIC_DEPS=(absl_status absl_statusor)
pc_requires="" dep_versions=""
for d in "${DEPS[@]}"; do
  v=$(pkg-config --modversion "$d")
  pc_requires+="${pc_requires:+, }$d = $v"
  dep_versions+="${dep_versions:+;}$v"
done
dep_modules=$(IFS=';'; echo "${DEPS[*]}")
# Link lines as CMake lists, duplicates dropped (shared libraries: order is
# free).
cmake_libs() { pkg-config --libs "$@" | tr ' ' '\n' | awk 'NF && !seen[$0]++' |
  paste -sd ';'; }
public_libs=$(cmake_libs "${PUBLIC_DEPS[@]}")
static_libs=$(cmake_libs "${DEPS[@]}")
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/include" "$tree/lib/pkgconfig" "$tree/lib/cmake/ps_client"

# Headers: the roots and every header of this repository they include
# (system headers are the Debian packages' and stay out).
IFS=, read -r -a root_list <<<"$roots"
deps=$(g++ -std=c++17 -MM -I. -I"$bin_dir" "${root_list[@]}" |
  sed -e 's/^[^:]*://' -e 's/\\$//' | tr ' ' '\n' | grep -v '^$' |
  grep -v '^/' | grep -v '\.cc$' | sort -u)
for h in $deps; do
  rel=${h#"$bin_dir"/}
  mkdir -p "$tree/include/$(dirname "$rel")"
  cp "$h" "$tree/include/$rel"
done

# One static archive of every library in the closure (thin archives and
# duplicate member names are handled by ar's MRI script).
{
  echo "create $tree/lib/libps_client.a"
  for a in "$@"; do echo "addlib $a"; done
  echo "save"
  echo "end"
} | ar -M
ranlib "$tree/lib/libps_client.a"

# The shared library: the same objects, every symbol resolved against the
# Debian libraries (--no-undefined: a missing dependency fails here).
g++ -shared -o "$tree/lib/libps_client.so.0" -Wl,-soname,libps_client.so.0 \
  -Wl,--no-undefined -Wl,--whole-archive "$tree/lib/libps_client.a" \
  -Wl,--no-whole-archive $(pkg-config --libs "${DEPS[@]}") -lpthread
ln -s libps_client.so.0 "$tree/lib/libps_client.so"

# The templates get the SDK's version and the versions of the Debian
# libraries it was built against (users must build against the same: see
# README.md here).
subst=(-e "s/@VERSION@/$version/g"
       -e "s/@ABSL_VERSION@/$(pkg-config --modversion absl_status)/g"
       -e "s/@GRPC_VERSION@/$(pkg-config --modversion grpc++)/g"
       -e "s/@PROTOBUF_VERSION@/$(pkg-config --modversion protobuf)/g"
       -e "s/@PC_REQUIRES@/$pc_requires/g"
       -e "s/@DEP_MODULES@/$dep_modules/g"
       -e "s/@DEP_VERSIONS@/$dep_versions/g"
       -e "s/@PUBLIC_LIBS@/$public_libs/g"
       -e "s/@STATIC_LIBS@/$static_libs/g")
sed "${subst[@]}" "$pc_in" >"$tree/lib/pkgconfig/ps_client.pc"
sed "${subst[@]}" "$pc_static_in" >"$tree/lib/pkgconfig/ps_client_static.pc"
sed "${subst[@]}" "$cmake_in" \
  >"$tree/lib/cmake/ps_client/ps_clientConfig.cmake"
sed "${subst[@]}" "$cmake_version_in" \
  >"$tree/lib/cmake/ps_client/ps_clientConfigVersion.cmake"
chmod -R u+w,go+rX "$tree"
tar -C "$tree" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime=@0 -cf "$out" .
