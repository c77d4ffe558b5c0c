#!/usr/bin/env bash
# Runs the whole test suite (unit, multi-process, fault, manifest checks) and
# ends with a line "N passed, N failed" counting test cases.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

set +e
bazel test "${BAZEL_FLAGS[@]}" --keep_going --test_tag_filters=-benchmark,-manual \
  //... 2>&1 | tee /tmp/ps_bazel_test.log
bazel_rc=${PIPESTATUS[0]}
set -e

python3 "$REPO_ROOT/.ci/summarize_tests.py" /tmp/ps_bazel_test.log "$REPO_ROOT/bazel-testlogs"
summary_rc=$?
if [[ $bazel_rc -ne 0 && $summary_rc -eq 0 ]]; then
  echo "bazel exited with $bazel_rc" >&2
  exit "$bazel_rc"
fi
exit "$summary_rc"
