#!/usr/bin/env bash
# Runs the whole test suite (unit, multi-process, fault, manifest checks), then
# the locking check (every C++ source compiled by clang with -Wthread-safety as
# an error), and ends with a line "N passed, N failed" counting test cases; the
# locking check counts as one case.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# Logs per checkout: several checkouts on one machine may run this at once
# (a shared /tmp/ps_bazel_test.log once mixed two runs' results).
log_dir="${TMPDIR:-/tmp}/ps-run-tests-$(printf %s "$REPO_ROOT" | md5sum | cut -c1-12)"
mkdir -p "$log_dir"
test_log="$log_dir/bazel_test.log"
clang_log="$log_dir/locking_check.log"

set +e
bazel test "${BAZEL_FLAGS[@]}" --keep_going --test_tag_filters=-benchmark,-manual \
  //... 2>&1 | tee "$test_log"
bazel_rc=${PIPESTATUS[0]}

# The locking check (.bazelrc, config locking_check; cost: README.md, "Code
# checks"). It has its own output base: sharing the gcc one would make each
# compiler switch rebuild the whole tree; its server exits after 10 idle
# minutes. The packages are named per top-level directory rather than as
# //..., which would also walk into the gcc output base through the
# bazel-<workspace> symlink (Bazel skips only its own output base's).
clang_base="${XDG_CACHE_HOME:-$HOME/.cache}/ps-bazel-clang/$(printf %s "$REPO_ROOT" | md5sum | cut -c1-16)"
clang_targets=(//:all)
for dir in "$REPO_ROOT"/*/; do
  dir=${dir%/}
  [[ -L $dir || $(basename "$dir") == bazel-* ]] && continue
  if [[ -n $(find "$dir" -name BUILD.bazel -print -quit) ]]; then
    clang_targets+=("//$(basename "$dir")/...")
  fi
done
echo "run-tests: locking check: bazel build --config=locking_check ${clang_targets[*]} (log: $clang_log)" >&2
bazel --output_base="$clang_base" --max_idle_secs=600 build "${BAZEL_FLAGS[@]}" \
  --config=locking_check --keep_going -- "${clang_targets[@]}" 2>&1 | tee "$clang_log"
clang_rc=${PIPESTATUS[0]}
set -e

python3 "$REPO_ROOT/.ci/summarize_tests.py" "$test_log" "$REPO_ROOT/bazel-testlogs" \
  --check "locking check (clang -Werror=thread-safety on every package, log $clang_log)=$clang_rc"
summary_rc=$?
if [[ $bazel_rc -ne 0 && $summary_rc -eq 0 ]]; then
  echo "bazel exited with $bazel_rc" >&2
  exit "$bazel_rc"
fi
exit "$summary_rc"
