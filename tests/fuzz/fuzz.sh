#!/usr/bin/env bash
# A longer fuzzing campaign of the server's request path.
#
# Usage: tests/fuzz/fuzz.sh [SECONDS (default 600)] [extra libFuzzer flags...]
# Builds out/fuzz/data_request_fuzzer (clang++, ASan + UBSan + libFuzzer),
# fuzzes from tests/fuzz/corpus, keeps the inputs it finds in
# out/fuzz/corpus and writes crashing inputs to out/fuzz/artifacts/.
# To keep a crash as a regression input once it is fixed:
#   cp out/fuzz/artifacts/crash-<sha> tests/fuzz/corpus/regression_<what>
# To fold the new inputs into the committed corpus (keeping it small):
#   out/fuzz/data_request_fuzzer -merge=1 tests/fuzz/corpus out/fuzz/corpus
set -euo pipefail
seconds="${1:-600}"
shift || true
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ws"
bazel build //proto:ps_proto_gen //server:worker_membership_proto_gen >&2
bash tests/fuzz/build_fuzzer.sh "$ws" "$ws/bazel-bin" out/fuzz/data_request_fuzzer
mkdir -p out/fuzz/corpus out/fuzz/artifacts
ARTIFACT_DIR=out/fuzz/artifacts NEW_CORPUS_DIR=out/fuzz/corpus \
  bash tests/fuzz/run_fuzzer.sh out/fuzz/data_request_fuzzer tests/fuzz/corpus \
  "$seconds" "$@"
