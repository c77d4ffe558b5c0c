#!/usr/bin/env bash
# Runs the request fuzzer for SECONDS from a seed corpus. The corpus directory
# is only read: new inputs go to a scratch directory (or NEW_CORPUS_DIR).
# Crashing inputs are written to $TEST_UNDECLARED_OUTPUTS_DIR (Bazel) or
# ARTIFACT_DIR (default: the current directory).
#
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [extra libFuzzer flags...]
set -euo pipefail
fuzzer="$1"
corpus="$2"
seconds="$3"
shift 3

artifacts="${TEST_UNDECLARED_OUTPUTS_DIR:-${ARTIFACT_DIR:-$PWD}}"
mkdir -p "$artifacts"
scratch="${NEW_CORPUS_DIR:-$(mktemp -d "${TEST_TMPDIR:-/tmp}/ps_fuzz_corpus.XXXXXX")}"
mkdir -p "$scratch"

# libFuzzer first runs every committed input (regressions must stay fixed),
# then mutates them until the time is up.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
set +e
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$@" "$scratch" "$corpus" 2>&1 |
  grep -v -e '^#[0-9]*.*\(NEW\|REDUCE\|pulse\)' -e 'NEW_FUNC' 
rc=${PIPESTATUS[0]}
set -e
if [[ $rc -ne 0 ]]; then
  echo "FUZZER FAILED (exit $rc); crashing input(s) in $artifacts:" >&2
  ls -l "$artifacts" >&2
  exit 1
fi
echo "fuzzer ran ${seconds}s without a finding"
