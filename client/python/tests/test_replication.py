"""A Python client of a replicated shard follows the primary by itself
(issue 18): ``ps_client.connect(config)`` on a config with ``replication:
factor: 2`` watches etcd (a real ``/usr/bin/etcd``), so pushes keep
succeeding across a SIGKILL of the primary and every acknowledged push is
applied exactly once on the new one."""

import os
import re
import signal
import socket
import subprocess
import time

import numpy as np
import pytest

import ps_client
from ps_client.testing import find_server_binary

ETCD = "/usr/bin/etcd"
SIZE = 16


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


class _Processes:
    """Started processes, SIGKILLed at the end of the test."""

    def __init__(self):
        self.procs = []

    def start(self, args, log_path):
        log = open(log_path, "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(proc)
        return proc

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture
def processes():
    p = _Processes()
    yield p
    p.stop()


@pytest.mark.skipif(not os.access(ETCD, os.X_OK),
                    reason="etcd-server is not installed")
def test_connect_from_config_follows_the_primary_across_a_kill(
        processes, tmp_path):
    client_port, peer_port = _free_port(), _free_port()
    client_url = f"http://127.0.0.1:{client_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    processes.start([
        ETCD, "--name=local", f"--data-dir={tmp_path / 'etcd'}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=local={peer_url}", "--initial-cluster-state=new",
        "--heartbeat-interval=25", "--election-timeout=250",
        "--grpc-keepalive-min-time=500ms"], tmp_path / "etcd.log")

    def etcd_up():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", client_port)) == 0
    _wait_for(etcd_up, 20, "etcd did not start: " + _read(tmp_path / "etcd.log"))

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
        _wait_for(lambda: _read(port_file).strip(), 20,
                  f"replica {i} wrote no port: " + _read(log))
        address = f"127.0.0.1:{_read(port_file).strip()}"
        replicas.append((proc, address, log))
        if i == 0:
            _wait_for(lambda: "is primary" in _read(log), 20,
                      "replica 0 did not become primary: " + _read(log))
    a_proc, a, a_log = replicas[0]
    b_proc, b, b_log = replicas[1]
    # Ids in the in_sync set are "<address>/<incarnation>".
    a_id, b_id = re.escape(a) + "/[0-9a-f]+", re.escape(b) + "/[0-9a-f]+"
    both = re.compile(r"in_sync = \[(%s,%s|%s,%s)\]" % (a_id, b_id, b_id, a_id))
    _wait_for(lambda: both.search(_read(a_log)), 20,
              "the backup did not get in sync: " + _read(b_log))

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
        assert values.tolist() == [200.0] * SIZE, _read(b_log)
        assert "is primary" in _read(b_log)
        # Control calls reach the new primary too.
        assert len(client.stats()) == 1
