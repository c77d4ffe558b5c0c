"""Helpers of the tests that start processes beside LocalCluster's
servers: free ports, waiting, logs, and a real etcd (``/usr/bin/etcd``)."""

import os
import socket
import subprocess
import time

ETCD = "/usr/bin/etcd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s, what):
    """Polls ``predicate`` until true; TimeoutError(what) after
    ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def read(path):
    """The file's text, or "" when it does not exist (yet)."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def all_stopped(pid):
    """Whether every thread of process ``pid`` is stopped (SIGSTOP takes
    effect asynchronously, thread by thread)."""
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        with open(f"{task}/{tid}/stat") as f:
            # "tid (comm) state ...": comm may hold spaces and parentheses.
            if f.read().rsplit(")", 1)[1].split()[0] != "T":
                return False
    return True


class Processes:
    """Started processes, SIGKILLed by stop() (the fixture's teardown)."""

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


def start_etcd(processes, directory):
    """Starts a one-member etcd with its data and log in ``directory``
    (fast heartbeats and elections, as the replication tests need); returns
    its client port once it accepts connections."""
    client_port, peer_port = free_port(), free_port()
    client_url = f"http://127.0.0.1:{client_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    log = directory / "etcd.log"
    processes.start([
        ETCD, "--name=local", f"--data-dir={directory / 'etcd'}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=local={peer_url}", "--initial-cluster-state=new",
        "--heartbeat-interval=25", "--election-timeout=250",
        "--grpc-keepalive-min-time=500ms"], log)

    def etcd_up():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", client_port)) == 0
    wait_for(etcd_up, 20, "etcd did not start: " + read(log))
    return client_port
