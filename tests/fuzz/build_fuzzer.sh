#!/usr/bin/env bash
# Compiles the request fuzzer with clang++ -fsanitize=fuzzer,address,undefined.
#
# Bazel's C++ toolchain here is gcc, which has no libFuzzer, and switching the
# shared output base to clang would rebuild everything for everyone, so the
# fuzzer is compiled outside Bazel. The sources are found the way the
# BUILD files pair them (one .h/.cc per library): starting from
# data_request_fuzzer.cc, every project header reached through #include
# "..." brings in its .cc (and that file's includes). The objects are
# cached under out/fuzz/ by a hash of every input, so an unchanged tree
# relinks nothing.
#
# Usage: build_fuzzer.sh WORKSPACE GENDIR OUTPUT
#   WORKSPACE: the repository root; GENDIR: Bazel's bin directory holding
#   the generated protobuf code the server includes: proto/ps.pb.{h,cc} and
#   server/worker_membership.pb.{h,cc} (bazel build //proto:ps_proto_gen
#   //server:worker_membership_proto_gen).
set -euo pipefail
ws="$(cd "$1" && pwd)"
gendir="$(cd "$2" && pwd)"
out="$3"

CXX="${FUZZ_CXX:-clang++}"
if ! command -v "$CXX" >/dev/null; then
  echo "build_fuzzer.sh: $CXX not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi

CXXFLAGS=(
  -std=c++17 -O1 -g -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  # vptr checks need every polymorphic class instrumented; the system
  # libraries (protobuf, absl) are not.
  -fno-sanitize=vptr
  -I"$ws" -I"$gendir"
  -DSPDLOG_FMT_EXTERNAL -DSPDLOG_COMPILED_LIB -DSPDLOG_SHARED_LIB
  -Wall -Wno-unused-parameter
)
# Abseil's libraries in link order (as third_party/system.BUILD).
ABSL=(flags_parse flags_usage flags_usage_internal flags_internal
  flags_marshalling flags_reflection flags_config flags_program_name
  flags_private_handle_accessor flags_commandlineflag
  flags_commandlineflag_internal raw_hash_set hashtablez_sampler hash city
  low_level_hash random_distributions random_seed_sequences
  random_internal_pool_urbg random_internal_randen
  random_internal_randen_hwaes random_internal_randen_hwaes_impl
  random_internal_randen_slow random_internal_platform
  random_internal_seed_material random_seed_gen_exception statusor status
  cord cordz_info cord_internal cordz_functions exponential_biased
  cordz_handle bad_optional_access bad_variant_access strerror
  str_format_internal synchronization graphcycles_internal stacktrace
  symbolize debugging_internal demangle_internal malloc_internal time
  civil_time time_zone strings strings_internal throw_delegate int128 base
  spinlock_wait raw_logging_internal log_severity)
# More than the shard needs today, so a server source that starts using
# gRPC, metrics or zlib still links.
LIBS=(-lgrpc++ -lgrpc -lgpr -lprotobuf -lprometheus-cpp-pull
  -lprometheus-cpp-core -lyaml-cpp -lspdlog -lfmt -lxxhash -lz)
for l in "${ABSL[@]}"; do LIBS+=("-labsl_$l"); done
LIBS+=(-lpthread -lrt)

# The .cc files to compile, one "ROOT<TAB>PATH" per line.
srcs="$(python3 - "$ws" "$gendir" <<'PY'
import os, re, sys
ws, gen = sys.argv[1], sys.argv[2]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
def find(rel):
    for root in (ws, gen):
        if os.path.isfile(os.path.join(root, rel)):
            return root
    return None
todo = [(ws, "tests/fuzz/data_request_fuzzer.cc")]
seen, ccs = set(), []
while todo:
    root, rel = todo.pop()
    if rel in seen:
        continue
    seen.add(rel)
    if rel.endswith(".cc"):
        ccs.append((root, rel))
    for h in inc.findall(open(os.path.join(root, rel), errors="replace").read()):
        hroot = find(h)
        if hroot is None or "/cuda/" in h:
            # A system header written with quotes, or CUDA code (behind the
            # backend interface; the fuzzer uses the CPU backend).
            continue
        todo.append((hroot, h))
        cc = h[:-2] + ".cc" if h.endswith(".h") else None
        if cc and find(cc):
            todo.append((find(cc), cc))
for root, rel in sorted(ccs, key=lambda x: x[1]):
    print(f"{root}\t{rel}")
PY
)"

# Every project file that can affect the build, hashed: sources, headers in
# the scanned directories, this script.
hash="$( { echo "${CXXFLAGS[*]}"; cat "$0";
  while IFS=$'\t' read -r root rel; do
    echo "$rel"; cat "$root/$rel"
    d="$(dirname "$rel")"
    cat "$root/$d"/*.h 2>/dev/null || true
  done <<<"$srcs"; cat "$ws"/common/*.h "$ws"/common/backend/*.h; } |
  sha256sum | cut -c1-16)"
cache="$ws/out/fuzz/obj-$hash"
mkdir -p "$ws/out/fuzz"
exec 9>"$ws/out/fuzz/.lock"
flock 9  # one build at a time (the suite's test and fuzz.sh may overlap)
if [[ ! -f "$cache/done" ]]; then
  rm -rf "$ws"/out/fuzz/obj-*
  mkdir -p "$cache"
  echo "build_fuzzer.sh: compiling $(wc -l <<<"$srcs") sources with $CXX" >&2
  while IFS=$'\t' read -r root rel; do
    printf '%q ' "$CXX" "${CXXFLAGS[@]}" -c "$root/$rel" \
      -o "$cache/$(echo "$rel" | tr / _).o"
    echo
  done <<<"$srcs" | xargs -P 2 -d '\n' -n 1 bash -c 2>&1 | sed 's/^/  /' >&2 || true
fi
objs=()
while IFS=$'\t' read -r root rel; do
  obj="$cache/$(echo "$rel" | tr / _).o"
  if [[ ! -f "$obj" ]]; then
    echo "build_fuzzer.sh: compiling $rel failed" >&2
    exit 1
  fi
  objs+=("$obj")
done <<<"$srcs"
touch "$cache/done"
mkdir -p "$(dirname "$out")"
"$CXX" "${CXXFLAGS[@]}" "${objs[@]}" "${LIBS[@]}" -o "$out"
