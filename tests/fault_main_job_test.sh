#!/usr/bin/env bash
# The main job survives a server crash: ps_launch runs the embedded default
# (Fashion-MNIST MLP 784-256-128-10, sync, 2 servers x 2 workers, 20 epochs),
# SIGKILLs server 1 at about 40% of the training (--kill_after_s, seconds
# after the first worker START line; training takes ~47-57 s on a 2-core
# machine) and restarts it on the same port. ps_launch gives the config a
# temporary server.checkpoint_dir with checkpoints every 2 s, so the
# restarted server restores its newest checkpoint (losing at most ~2 s of
# shard-1 updates), the workers reconnect, shard 1 catches their clocks up,
# and the job must still reach the main job's target: test accuracy >= 0.88.
#
# Checks: exit 0; exactly one RESULT line with test_accuracy >= 0.88 and
# server_restarts=1; the chaos kill was logged; the restarted server 1
# logged "restored checkpoint" before "serving on".
#
#   bazel test //tests:fault_main_job_test          # ~50-60 s, runs alone
#   tests/fault_main_job_test.sh [PS_LAUNCH PS_SERVER PS_WORKER]  # by hand
set -euo pipefail

KILL_AFTER_S=${KILL_AFTER_S:-19}
TARGET=0.88

if [[ $# -ge 3 ]]; then
  launch=$1 server=$2 worker=$3
elif [[ -n ${TEST_SRCDIR:-} ]]; then
  launch=$TEST_SRCDIR/ps/deploy/launcher/ps_launch
  server=$TEST_SRCDIR/ps/server/ps_server
  worker=$TEST_SRCDIR/ps/worker/ps_worker
else
  repo=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
  launch=$repo/bazel-bin/deploy/launcher/ps_launch
  server=$repo/bazel-bin/server/ps_server
  worker=$repo/bazel-bin/worker/ps_worker
fi
work=${TEST_TMPDIR:-$(mktemp -d)}
log=$work/launch.log

fail() {
  echo "FAIL: $*" >&2
  echo "---- last 60 lines of the ps_launch output ($log) ----" >&2
  tail -n 60 "$log" >&2 || true
  exit 1
}

start=$SECONDS
set +e
"$launch" --progress=plain --server_bin="$server" --worker_bin="$worker" \
  --out_dir="$work/out" --kill_server=1 --kill_after_s="$KILL_AFTER_S" \
  > "$log" 2>&1
rc=$?
set -e
elapsed=$((SECONDS - start))
echo "ps_launch exited $rc after ${elapsed} s"
grep -E '^\[launch\] (chaos|servers ready)' "$log" || true
grep -E '^\[server 1\].*(restored checkpoint|caught up|serving on)' "$log" || true
grep '^RESULT ' "$log" || true

[[ $rc -eq 0 ]] || fail "ps_launch exited $rc"

results=$(grep -c '^RESULT ' "$log" || true)
[[ $results -eq 1 ]] || fail "expected exactly one RESULT line, got $results"
result=$(grep '^RESULT ' "$log")
[[ $result == *" server_restarts=1"* ]] || fail "RESULT lacks server_restarts=1: $result"
accuracy=$(sed -E 's/.* test_accuracy=([0-9.]+) .*/\1/' <<< "$result")
python3 -c "import sys; sys.exit(0 if float('$accuracy') >= $TARGET else 1)" ||
  fail "test accuracy $accuracy is below the target $TARGET"

# The kill came, mid-training, then the restart.
kill_line=$(grep -n '^\[launch\] chaos: SIGKILL server 1 ' "$log" | head -n 1 | cut -d: -f1)
[[ -n $kill_line ]] || fail "no '[launch] chaos: SIGKILL server 1' line"
restart_line=$(grep -n '^\[launch\] chaos: restarted server 1 ' "$log" | head -n 1 | cut -d: -f1)
[[ -n $restart_line && $restart_line -gt $kill_line ]] || fail "no restart after the kill"
final_line=$(grep -n '^\[worker 0\] FINAL ' "$log" | head -n 1 | cut -d: -f1)
[[ -n $final_line && $final_line -gt $kill_line ]] ||
  fail "the kill did not land mid-training (FINAL before the kill)"

# The restarted server restored a checkpoint before it served.
after=$(tail -n "+$restart_line" "$log")
restored=$(grep -n '^\[server 1\] .*restored checkpoint' <<< "$after" | head -n 1 | cut -d: -f1)
serving=$(grep -n '^\[server 1\] .*serving on' <<< "$after" | head -n 1 | cut -d: -f1)
[[ -n $restored ]] || fail "the restarted server 1 did not log 'restored checkpoint'"
[[ -n $serving && $restored -lt $serving ]] ||
  fail "server 1 did not restore its checkpoint before serving"

echo "PASS: test_accuracy=$accuracy with server 1 killed ${KILL_AFTER_S} s into training and restarted (${elapsed} s)"
