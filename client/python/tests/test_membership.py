"""Membership from Python: DenseParameters rejoins after an eviction and
the job finishes exactly; the exceptions carry what a worker acts on."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

import ps_client

HERE = os.path.dirname(os.path.abspath(__file__))

SYNC = """
tables:
  - name: s
    kind: dense
    size: 8
    consistency: sync
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  heartbeat_timeout_ms: 1000
client:
  heartbeat_interval_ms: 100
"""


def _progress(path):
    try:
        with open(path) as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0


def test_paused_worker_rejoins_and_the_job_finishes_exactly(make_cluster,
                                                            tmp_path):
    steps = 120
    cluster = make_cluster(SYNC, num_servers=2, num_workers=2)
    workers, progress = [], []
    for w in range(2):
        progress.append(str(tmp_path / f"progress_{w}"))
        workers.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "membership_worker.py"),
             cluster.client_config_path, str(w), str(steps), "0.01",
             progress[w]],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        deadline = time.monotonic() + 60
        while _progress(progress[1]) < 15 and time.monotonic() < deadline:
            assert all(p.poll() is None for p in workers), [
                p.communicate()[0] for p in workers if p.poll() is not None]
            time.sleep(0.01)
        assert _progress(progress[1]) >= 15, "worker 1 makes no progress"
        workers[1].send_signal(signal.SIGSTOP)
        before = _progress(progress[0])
        time.sleep(2.5)  # 2.5 heartbeat timeouts
        after = _progress(progress[0])
        workers[1].send_signal(signal.SIGCONT)
        assert after >= before + 10, "the job waited for the paused worker"
        outputs = [p.communicate(timeout=60)[0] for p in workers]
    finally:
        for p in workers:
            if p.poll() is None:
                p.kill()
                p.wait()
    for w, (p, out) in enumerate(zip(workers, outputs)):
        assert p.returncode == 0, out
        assert f"DONE steps={steps}" in out, out
    assert "rejoins=1" in outputs[1], outputs[1]
    assert "rejoins=0" in outputs[0], outputs[0]
    reader = ps_client.connect(cluster.client_config_path)
    # Every step subtracted exactly 1, none twice, none diluted.
    np.testing.assert_array_equal(reader.pull_dense("s").wait(),
                                  np.full(8, -steps, np.float32))
    for shard in reader.stats():
        assert shard.tables[0].step == steps
        assert [w.state for w in shard.workers] == ["left", "left"]
        assert shard.job_generation == 1
    reader.close()


def test_restarted_worker_starts_at_the_jobs_step(make_cluster):
    cluster = make_cluster(SYNC, num_servers=2, num_workers=1)
    client = ps_client.connect(cluster.client_config_path, worker_index=0)
    module_params = np.ones(8, np.float32)
    for _ in range(3):
        client.push_dense("s", module_params).wait()
        client.clock()
    assert client.job_step == 3
    client.close()  # leaves; the job ends with its only worker
    again = ps_client.connect(cluster.client_config_path, worker_index=0)
    # Every worker left: this is a new run (no job id), starting clean.
    assert again.job_start_clock == 3
    assert again.job_step == 0
    again.close()


def test_membership_refusals_are_their_own_exceptions():
    e = ps_client.errors.from_status(9, "worker 1 was evicted",
                                     membership="evicted", current_step=57)
    assert isinstance(e, ps_client.Evicted)
    assert isinstance(e, ps_client.NotAMember)
    assert isinstance(e, ps_client.FailedPrecondition)
    assert (e.reason, e.current_step) == ("evicted", 57)
    e = ps_client.errors.from_status(9, "replaced", membership="replaced")
    assert type(e) is ps_client.NotAMember and e.reason == "replaced"
    outcome = {"applied": [0], "not_applied": [], "unknown": [1]}
    e = ps_client.errors.from_status(14, "partial", push_outcome=outcome)
    assert type(e) is ps_client.Unavailable and e.push_outcome == outcome
    assert ps_client.errors.from_status(9, "x").push_outcome is None


def test_a_worker_that_left_is_refused(make_cluster):
    cluster = make_cluster(SYNC, num_servers=2, num_workers=2)
    client = ps_client.connect(cluster.client_config_path, worker_index=0)
    client.leave()
    try:
        client.clock()
        raise AssertionError("clock() after leave() succeeded")
    except ps_client.NotAMember as e:
        assert e.reason == "left"
    client.close()
