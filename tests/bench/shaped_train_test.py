"""Smoke test of shaped_train.py (the main job over shaped links): one round,
unshaped and 1 Gbit/s, one epoch. Checks the measurement, not the figures:

- the link is really shaped: no step beats the time the model's bytes take
  on the link (beyond tbf's bucket);
- the model accounts for the step within 2x (the link and the step's own
  work are most of it; generous for a loaded 2-core machine);
- training through a shaped link computes exactly what it computes without
  shaping: the same test accuracy (sync with two workers sums two gradients
  per element, a + b == b + a in IEEE arithmetic, so arrival order does not
  matter).

Skips where network namespaces are not permitted. Environment
(pytest_test.sh makes the paths absolute): SHAPED_TRAIN, PS_SERVER, PS_WORKER.
"""
import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.environ.get('SHAPED_TRAIN', 'tests/bench/shaped_train.py')
SERVER = os.environ.get('PS_SERVER', 'bazel-bin/server/ps_server')
WORKER = os.environ.get('PS_WORKER', 'bazel-bin/worker/ps_worker')


def test_job_on_a_1_gbit_link_matches_the_model_and_the_unshaped_result(tmp_path):
    out = tmp_path / 'shaped.json'
    done = subprocess.run([sys.executable, SCRIPT, '--rates_mbit=0,1000', '--rounds=1',
                           '--epochs=1', '--server_bin=' + SERVER, '--worker_bin=' + WORKER,
                           '--json_out=' + str(out)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode == 3 and 'unavailable' in done.stderr:
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    doc = json.loads(out.read_text())
    unshaped, shaped = doc['rows']
    assert (unshaped['rate_mbit'], shaped['rate_mbit']) == (0, 1000)
    assert 'model_ms' not in unshaped

    # One phase's bytes in Ethernet frames, less tbf's 128 KiB bucket, at
    # 1 Gbit/s; a step has two phases (pull, push).
    assert doc['wire_bytes'] == 4 * 235146
    transfer_ms = (4 * 235146 * 1514 / 1448 - 128 * 1024) * 8 / 1e9 * 1e3
    assert shaped['transfer_ms'] == pytest.approx(transfer_ms)
    assert shaped['step_ms'] >= 0.95 * 2 * transfer_ms, shaped
    assert shaped['link_busy'] == pytest.approx(2 * transfer_ms / shaped['step_ms'])
    assert 1.0 <= shaped['of_model'] <= 2.0, shaped
    for row in (unshaped, shaped):
        assert 0 < row['compute_ms'] < row['step_ms'], row
        assert row['rtt_us'] > 0, row
    assert unshaped['step_ms'] < shaped['step_ms']
    assert shaped['accuracy'] == unshaped['accuracy'] > 0.7
