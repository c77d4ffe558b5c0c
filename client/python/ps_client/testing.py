"""A local cluster of real ``ps_server`` processes, for tests and benchmarks.

Each server is started with ``--listen 127.0.0.1:0 --port_file F`` so the OS
picks every port; the harness reads the ports back and writes a client
config with the real addresses::

    with LocalCluster(TABLES_YAML, num_servers=2, num_workers=2) as cluster:
        client = ps_client.connect(cluster.client_config_path, worker_index=0)

The servers get SIGTERM when the cluster is stopped (``with`` exit, stop(),
garbage collection) and, through PR_SET_PDEATHSIG, when the process that
started them dies, so no exit path leaves them running.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time

__all__ = ["LocalCluster", "find_server_binary"]

_PR_SET_PDEATHSIG = 1


def find_server_binary():
    """``$PS_SERVER_BIN``, else ``server/ps_server`` in a Bazel test's
    runfiles, else ``bazel-bin/server/ps_server`` under the working
    directory. FileNotFoundError when none exists."""
    candidates = [os.environ.get("PS_SERVER_BIN")]
    if os.environ.get("TEST_SRCDIR"):
        candidates.append(os.path.join(os.environ["TEST_SRCDIR"], "ps",
                                       "server", "ps_server"))
    candidates.append(os.path.join("bazel-bin", "server", "ps_server"))
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return os.path.abspath(path)
    raise FileNotFoundError(
        "ps_server not found: set PS_SERVER_BIN or build //server:ps_server")


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalCluster:
    """``num_servers`` ps_server processes on 127.0.0.1 sharing one config.

    Args:
        body_yaml: the config without its ``cluster:`` section (tables,
            server, client, ...); the harness writes ``cluster:``.
        num_servers, num_workers: the cluster's shape.
        server_bin: the ps_server binary (default: find_server_binary()).
        extra_server_flags: more flags for every server.
        start_timeout_s: how long a server may take to write its port.
    """

    def __init__(self, body_yaml, *, num_servers=2, num_workers=1,
                 server_bin=None, extra_server_flags=(), start_timeout_s=30):
        self._server_bin = server_bin or find_server_binary()
        self._flags = list(extra_server_flags)
        self._timeout = start_timeout_s
        self._body = body_yaml
        self._num_workers = num_workers
        self.dir = tempfile.mkdtemp(prefix="ps_cluster_",
                                    dir=os.environ.get("TEST_TMPDIR"))
        self._procs = [None] * num_servers
        self.addresses = [None] * num_servers
        # Placeholder addresses: the servers bind port 0 (--listen); the
        # partitioning only needs their count.
        self.config_path = self._write_config(
            "cluster.yaml", [f"127.0.0.1:{1 + i}" for i in range(num_servers)])
        self.client_config_path = None
        try:
            for i in range(num_servers):
                self._start(i, "127.0.0.1:0")
            self.client_config_path = self._write_config("client.yaml",
                                                         self.addresses)
        except BaseException:
            self.stop()
            raise

    def _write_config(self, name, servers):
        path = os.path.join(self.dir, name)
        quoted = ", ".join(f'"{s}"' for s in servers)
        with open(path, "w") as f:
            f.write(f"cluster:\n  servers: [{quoted}]\n"
                    f"  num_workers: {self._num_workers}\n{self._body}")
        return path

    def _start(self, i, listen):
        port_file = os.path.join(self.dir, f"port_{i}")
        if os.path.exists(port_file):
            os.unlink(port_file)
        log = open(self.log_path(i), "ab")
        with log:
            self._procs[i] = subprocess.Popen(
                [self._server_bin, f"--config={self.config_path}",
                 f"--index={i}", f"--listen={listen}",
                 f"--port_file={port_file}", *self._flags],
                stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                port = open(port_file).read().strip()
                if port:
                    self.addresses[i] = f"127.0.0.1:{port}"
                    return
            if self._procs[i].poll() is not None:
                raise RuntimeError(f"server {i} exited during start-up "
                                   f"({self._procs[i].returncode}):\n"
                                   f"{self.server_log(i)}")
            time.sleep(0.02)
        raise TimeoutError(f"server {i} wrote no port file in "
                           f"{self._timeout} s:\n{self.server_log(i)}")

    def log_path(self, i):
        """The log file of server ``i``."""
        return os.path.join(self.dir, f"server_{i}.log")

    def server_log(self, i):
        """The contents of server ``i``'s log."""
        try:
            with open(self.log_path(i), errors="replace") as f:
                return f.read()
        except OSError:
            return "(no log)"

    def server_pid(self, i):
        """Process id of server ``i``, or None when it is not running."""
        proc = self._procs[i]
        return proc.pid if proc is not None and proc.poll() is None else None

    def kill_server(self, i, sig=signal.SIGKILL):
        """Sends ``sig`` to server ``i`` and waits; returns its exit code."""
        proc = self._procs[i]
        proc.send_signal(sig)
        code = proc.wait()
        self._procs[i] = None
        return code

    def restart_server(self, i):
        """Starts server ``i`` again on its port."""
        self._start(i, self.addresses[i])

    def stop(self):
        """SIGTERM to every server; waits for each (SIGKILL after 10 s).
        Removes the cluster's directory."""
        for proc in self._procs:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for i, proc in enumerate(self._procs):
            if proc is None:
                continue
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self._procs[i] = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        if any(p is not None for p in getattr(self, "_procs", [])):
            self.stop()
