#!/usr/bin/env bash
# The suite's fuzz test: builds the fuzzer from the workspace (see
# build_fuzzer.sh) and fuzzes for 25 s from tests/fuzz/corpus.
set -euo pipefail
runfiles="$TEST_SRCDIR/$TEST_WORKSPACE"
# The runfiles link to the workspace's files; the workspace holds the rest
# of the server sources the fuzzer's #includes lead to.
ws="$(dirname "$(dirname "$(dirname "$(readlink -f "$runfiles/tests/fuzz/run_fuzzer.sh")")")")"
fuzzer="$TEST_TMPDIR/data_request_fuzzer"
bash "$runfiles/tests/fuzz/build_fuzzer.sh" "$ws" "$runfiles" "$fuzzer"
bash "$runfiles/tests/fuzz/run_fuzzer.sh" "$fuzzer" "$runfiles/tests/fuzz/corpus" 25
