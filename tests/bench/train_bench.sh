#!/usr/bin/env bash
# End-to-end training benchmark: time to 0.85 test accuracy and training
# throughput on Fashion-MNIST (the MLP of deploy/examples/fashion_mnist.yaml)
# for the in-process trainer (the ceiling: same model code and optimizer, no
# servers) and local clusters run by ps_launch: 1x1 sync, 2x2 sync, 2x2
# async and 2x2 ssp (staleness 2). Prints a table for people and one JSON
# line ("JSON {...}") for machines.
#
#   tests/bench/train_bench.sh            # EPOCHS=4 by default
#   EPOCHS=15 TARGET=0.88 tests/bench/train_bench.sh
#
# time_to_target_s is the training clock of the trainer / worker 0 at the
# first evaluation (every EVAL_EVERY steps of worker 0) reaching TARGET; it
# excludes process start-up and data loading, includes evaluation pauses.
# samples_per_s is examples per second of training over all workers
# (evaluation excluded). All runs share this machine's cores, so the
# in-process trainer gets every core for OpenBLAS while each cluster worker
# gets cores / workers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

EPOCHS="${EPOCHS:-4}"
TARGET="${TARGET:-0.85}"
EVAL_EVERY="${EVAL_EVERY:-100}"
BAZEL_FLAGS=(${BAZEL_FLAGS:-})

bazel build "${BAZEL_FLAGS[@]}" //deploy/launcher:ps_launch //worker:local_train \
  //server:ps_server //worker:ps_worker >&2
BIN="$(bazel info "${BAZEL_FLAGS[@]}" bazel-bin 2>/dev/null)"
WORK="$(mktemp -d /tmp/train_bench_XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

CONFIG="$WORK/fashion_mnist.yaml"
sed -e "s/^\(  epochs:\).*/\1 $EPOCHS/" \
    -e "s/^\(  eval_every_steps:\).*/\1 $EVAL_EVERY/" \
    deploy/examples/fashion_mnist.yaml > "$CONFIG"

RESULTS="$WORK/results.tsv"
: > "$RESULTS"

# Appends "name<TAB>time_to_target<TAB>samples_per_s<TAB>final_acc<TAB>wall_s".
record() {
  local name="$1" evals="$2" sps="$3" acc="$4" wall="$5"
  local ttt
  ttt="$(awk -v t="$TARGET" '$2 >= t { print $1; exit }' "$evals")"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${ttt:-}" "$sps" "$acc" "$wall" >> "$RESULTS"
}

# In-process trainer with the sync cluster's global batch (2 x 64).
echo "== in-process trainer" >&2
"$BIN/worker/local_train" --config="$CONFIG" > "$WORK/local.log"
grep '^EVAL ' "$WORK/local.log" |
  sed -E 's/.*test_accuracy=([0-9.]+) time_s=([0-9.]+).*/\2 \1/' > "$WORK/local.evals"
line="$(grep '^RESULT ' "$WORK/local.log")"
record "in-process (batch 128)" "$WORK/local.evals" \
  "$(sed -E 's/.*samples_per_s=([0-9.]+).*/\1/' <<< "$line")" \
  "$(sed -E 's/.*test_accuracy=([0-9.]+).*/\1/' <<< "$line")" \
  "$(sed -E 's/.*wall_s=([0-9.]+).*/\1/' <<< "$line")"

run_cluster() {
  local name="$1"; shift
  echo "== $name" >&2
  "$BIN/deploy/launcher/ps_launch" --config="$CONFIG" --progress=plain \
    --out_dir="$WORK/out_${#name}_$RANDOM" "$@" > "$WORK/launch.log" 2>&1 || {
      tail -n 30 "$WORK/launch.log" >&2; echo "ps_launch failed for $name" >&2; exit 1; }
  local csv result
  csv="$(sed -n 's/^\[launch\] metrics: //p' "$WORK/launch.log")"
  result="$(grep '^RESULT ' "$WORK/launch.log")"
  awk -F, 'NR > 1 && $5 != "" { print $1, $5 }' "$csv" > "$WORK/cluster.evals"
  record "$name" "$WORK/cluster.evals" \
    "$(sed -E 's/.*samples_per_s=([0-9.]+).*/\1/' <<< "$result")" \
    "$(sed -E 's/.*test_accuracy=([0-9.]+).*/\1/' <<< "$result")" \
    "$(sed -E 's/.*wall_s=([0-9.]+).*/\1/' <<< "$result")"
}

run_cluster "1x1 sync"  --servers=1 --workers=1 --consistency=sync
run_cluster "2x2 sync"  --servers=2 --workers=2 --consistency=sync
run_cluster "2x2 async" --servers=2 --workers=2 --consistency=async
run_cluster "2x2 ssp s=2" --servers=2 --workers=2 --consistency=ssp --staleness=2

python3 - "$RESULTS" "$TARGET" "$EPOCHS" <<'PY'
import json, sys
path, target, epochs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows = []
for line in open(path):
    name, ttt, sps, acc, wall = line.rstrip("\n").split("\t")
    rows.append({"config": name,
                 "time_to_target_s": float(ttt) if ttt else None,
                 "samples_per_s": float(sps), "final_test_accuracy": float(acc),
                 "wall_s": float(wall)})
ceiling = rows[0]
for r in rows:
    r["throughput_vs_ceiling"] = round(r["samples_per_s"] / ceiling["samples_per_s"], 3)
    if r["time_to_target_s"] and ceiling["time_to_target_s"]:
        r["time_to_target_vs_ceiling"] = round(
            r["time_to_target_s"] / ceiling["time_to_target_s"], 2)
    else:
        r["time_to_target_vs_ceiling"] = None
print(f"Fashion-MNIST MLP 784-256-128-10, {epochs} epochs; ceiling = in-process trainer")
hdr = f"{'config':<24}{'t->' + str(target) + ' (s)':>14}{'x ceiling':>11}{'samples/s':>12}{'x ceiling':>11}{'final acc':>11}{'wall (s)':>10}"
print(hdr)
print("-" * len(hdr))
for r in rows:
    t = f"{r['time_to_target_s']:.1f}" if r["time_to_target_s"] is not None else "not reached"
    tx = f"{r['time_to_target_vs_ceiling']:.2f}" if r["time_to_target_vs_ceiling"] else "-"
    print(f"{r['config']:<24}{t:>14}{tx:>11}{r['samples_per_s']:>12.0f}"
          f"{r['throughput_vs_ceiling']:>11.3f}{r['final_test_accuracy']:>11.4f}{r['wall_s']:>10.1f}")
print("JSON " + json.dumps({"benchmark": "train", "target_accuracy": target,
                            "epochs": epochs, "ceiling": ceiling["config"],
                            "results": rows}))
PY
