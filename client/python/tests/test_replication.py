"""A Python client of a replicated shard follows the primary by itself
(issue 18): ``ps_client.connect(config)`` on a config with ``replication:
factor: 2`` watches etcd (a real ``/usr/bin/etcd``), so pushes keep
succeeding across a SIGKILL of the primary and every acknowledged push is
applied exactly once on the new one."""

import os
import re
import signal

import numpy as np
import pytest

import ps_client
from local_processes import ETCD, Processes, read, start_etcd, wait_for
from ps_client.testing import find_server_binary

SIZE = 16


@pytest.fixture
def processes():
    p = Processes()
    yield p
    p.stop()


@pytest.mark.skipif(not os.access(ETCD, os.X_OK),
                    reason="etcd-server is not installed")
def test_connect_from_config_follows_the_primary_across_a_kill(
        processes, tmp_path):
    client_port = start_etcd(processes, tmp_path)

    config = tmp_path / "cluster.yaml"
    config.write_text(f"""
cluster: {{servers: ["127.0.0.1:1"], num_workers: 1}}
replication:
  factor: 2
  etcd_endpoints: ["127.0.0.1:{client_port}"]
  lease_ttl_s: 1
  cluster_id: pyfailover
client:
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 200
  keepalive_ms: 1000
  keepalive_timeout_ms: 1000
tables:
  - name: w
    kind: dense
    size: {SIZE}
    consistency: async
    optimizer: {{type: sgd, learning_rate: 1.0}}
""")
    replicas = []
    for i in range(2):
        port_file = tmp_path / f"replica{i}.port"
        log = tmp_path / f"replica{i}.log"
        proc = processes.start([
            find_server_binary(), f"--config={config}", "--index=0",
            "--listen=127.0.0.1:0", f"--port_file={port_file}"], log)
        wait_for(lambda: read(port_file).strip(), 20,
                  f"replica {i} wrote no port: " + read(log))
        address = f"127.0.0.1:{read(port_file).strip()}"
        replicas.append((proc, address, log))
        if i == 0:
            wait_for(lambda: "is primary" in read(log), 20,
                      "replica 0 did not become primary: " + read(log))
    a_proc, a, a_log = replicas[0]
    b_proc, b, b_log = replicas[1]
    # Ids in the in_sync set are "<address>/<incarnation>".
    a_id, b_id = re.escape(a) + "/[0-9a-f]+", re.escape(b) + "/[0-9a-f]+"
    both = re.compile(r"in_sync = \[(%s,%s|%s,%s)\]" % (a_id, b_id, b_id, a_id))
    wait_for(lambda: both.search(read(a_log)), 20,
              "the backup did not get in sync: " + read(b_log))

    plus_one = np.full(SIZE, -1.0, np.float32)  # SGD(lr 1): each push +1
    with ps_client.connect(str(config)) as client:
        w = client.get_table("w")
        for _ in range(100):
            client.push_dense(w, plus_one).wait()
        a_proc.send_signal(signal.SIGKILL)
        a_proc.wait()
        # Every push succeeds: the client resends to B, the new primary.
        for _ in range(100):
            client.push_dense(w, plus_one).wait()
        values = client.pull_dense(w).wait()
        assert values.tolist() == [200.0] * SIZE, read(b_log)
        assert "is primary" in read(b_log)
        # Control calls reach the new primary too.
        assert len(client.stats()) == 1
