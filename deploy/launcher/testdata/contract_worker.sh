#!/bin/sh
# A trainer that keeps the worker contract (deploy/launcher/WORKER_CONTRACT.md)
# without training anything: ps_launch's tests run it through --worker_cmd.
#
# It prints what it was given (ARGS / ENV lines), then the protocol lines of
# a 2-epoch, 3-steps-per-epoch run whose values are fixed: worker i's loss
# at step s is (10 - s + i) / 10; worker 0 evaluates 0.5 at step 3 and ends
# with FINAL test_accuracy=0.8125.
#
# $CONTRACT_MODE (from the test's environment) changes the run:
#   crash        exit 3 after START, every time
#   crash_once   exit 3 after the first PROGRESS line, once per worker index
#                (remembered in $CONTRACT_STATE_DIR), then run normally
#   stall_w1     worker 1 prints START, then nothing (sleeps 10 minutes)
set -u
config= index=
for arg in "$@"; do
  case $arg in
    --config=*) config=${arg#--config=} ;;
    --index=*) index=${arg#--index=} ;;
  esac
done
echo "ARGS $*"
echo "ENV PS_CONFIG=${PS_CONFIG:-} PS_WORKER_INDEX=${PS_WORKER_INDEX:-} PS_NUM_WORKERS=${PS_NUM_WORKERS:-}"
if [ -r "$config" ] && grep -q '127.0.0.1:[0-9][0-9]*' "$config"; then
  echo "CONFIG readable with addresses"
fi
mode=${CONTRACT_MODE:-}
echo "START worker=$index model=contract epochs=2 steps_per_epoch=3 examples=12"
if [ "$mode" = crash ]; then exit 3; fi
if [ "$mode" = stall_w1 ] && [ "$index" = 1 ]; then exec sleep 600; fi
step=1
while [ $step -le 6 ]; do
  epoch=$(( (step - 1) / 3 + 1 ))
  tenths=$(( 10 - step + index ))
  echo "PROGRESS worker=$index epoch=$epoch step=$step loss=$((tenths / 10)).$((tenths % 10)) samples_per_s=100 time_s=$step.000"
  if [ "$mode" = crash_once ] && [ ! -e "$CONTRACT_STATE_DIR/crashed_$index" ]; then
    touch "$CONTRACT_STATE_DIR/crashed_$index"
    exit 3
  fi
  if [ "$index" = 0 ] && [ $step -eq 3 ]; then
    echo "EVAL worker=0 epoch=1 step=3 test_accuracy=0.5 time_s=3.500"
  fi
  sleep 0.05
  step=$((step + 1))
done
if [ "$index" = 0 ]; then
  # auc: a trainer's own result, repeated in RESULT; samples_per_s clashes
  # with RESULT's own field and is left out.
  echo "FINAL worker=0 steps=6 test_accuracy=0.8125 time_s=6.5 auc=0.9 samples_per_s=1"
fi
echo "DONE worker=$index steps=6 samples=24 wall_s=2 samples_per_s=12"
