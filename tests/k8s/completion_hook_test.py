#!/usr/bin/python3
"""Tests of deploy/docker/ps_completion_hook.sh against a fake Kubernetes API
server (HTTP on 127.0.0.1, an OS-picked port) that serves the worker Job and
the StatefulSets' status from scripts of answers and records the scale
requests; with --etcd, against a real etcd (Debian's /usr/bin/etcd on
127.0.0.1, OS-picked ports, a temporary data directory), checked with
etcdctl.

Run by //tests/k8s:completion_hook_test (pytest, one JUnit case per test).
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOOK = os.path.join(REPO, "deploy", "docker", "ps_completion_hook.sh")
MAKE_CERTS = os.path.join(REPO, "tests", "security", "make_certs.sh")
TOKEN = "hook-token-123"
JOB_PATH = "/apis/batch/v1/namespaces/train/jobs/ps-worker"
SCALE_PREFIX = "/apis/apps/v1/namespaces/train/statefulsets/"
SCALE_PATH = SCALE_PREFIX + "ps-server/scale"
SCALE_PATH_R1 = SCALE_PREFIX + "ps-server-r1/scale"


def job(*conditions):
    """A Job object with the given (type, status, reason) conditions."""
    return {"kind": "Job", "metadata": {"name": "ps-worker"},
            "status": {"conditions": [{"type": t, "status": s, "reason": r}
                                      for t, s, r in conditions]}}


RUNNING = (200, job())
COMPLETE = (200, job(("SuccessCriteriaMet", "True", "CompletionsReached"),
                     ("Complete", "True", "CompletionsReached")))
FAILED = (200, job(("FailureTarget", "True", "BackoffLimitExceeded"),
                   ("Failed", "True", "BackoffLimitExceeded")))
NOT_FOUND = (404, {"kind": "Status", "message": "jobs.batch \"ps-worker\" not found"})


def statefulset(generation, observed_generation, replicas):
    """A StatefulSet object whose status says `replicas` pods exist as of
    `observed_generation`."""
    return (200, {"kind": "StatefulSet", "metadata": {"generation": generation},
                  "status": {"observedGeneration": observed_generation,
                             "replicas": replicas}})


def running(answer):
    """Whether a StatefulSet answer may still have server pods."""
    status, obj = answer
    return status != 200 or not (
        obj["status"]["observedGeneration"] >= obj["metadata"]["generation"] and
        obj["status"]["replicas"] == 0)


DRAINED = statefulset(2, 2, 0)


class FakeApi:
    """Answers GETs of the Job from `job_answers` (the last one repeats),
    PATCHes of the scale subresource of the StatefulSets `statefulsets` with
    `scale_status` (others: 404), and GETs of StatefulSet NAME from
    `sts_answers[NAME]` (the last one repeats; default DRAINED), calling
    `on_running(name)` while it answers that pods may still run; records
    every request as (method, path, headers, body)."""

    def __init__(self, job_answers, scale_status=200, statefulsets=("ps-server",),
                 sts_answers=None, on_running=None):
        self.job_answers = list(job_answers)
        self.scale_status = scale_status
        self.scale_paths = [SCALE_PREFIX + name + "/scale" for name in statefulsets]
        self.sts_answers = {name: list(answers) for name, answers in
                            (sts_answers or {}).items()}
        self.on_running = on_running
        self.requests = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def record(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                api.requests.append((self.command, self.path, dict(self.headers), body))

            def do_GET(self):
                self.record()
                name = self.path[len(SCALE_PREFIX):]
                if self.path.startswith(SCALE_PREFIX) and "/" not in name:
                    answers = api.sts_answers.setdefault(name, [DRAINED])
                    answer = answers.pop(0) if len(answers) > 1 else answers[0]
                    if running(answer) and api.on_running:
                        api.on_running(name)
                    return self.answer(*answer)
                if self.path != JOB_PATH:
                    return self.answer(404, {"message": "no such path " + self.path})
                status, obj = (api.job_answers.pop(0) if len(api.job_answers) > 1
                               else api.job_answers[0])
                self.answer(status, obj)

            def do_PATCH(self):
                self.record()
                if self.path not in api.scale_paths:
                    return self.answer(404, {"message": "statefulsets.apps not found"})
                self.answer(api.scale_status, {"kind": "Scale",
                                               "spec": {"replicas": 0}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def patches(self):
        return [r for r in self.requests if r[0] == "PATCH"]

    def statefulset_gets(self, name):
        return [r for r in self.requests if r[0] == "GET" and r[1] == SCALE_PREFIX + name]


def run_hook(api, tmp_path, *extra):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    argv = ["bash", HOOK, "--api=" + api.url, "--token_file=%s" % token_file,
            "--namespace=train", "--job=ps-worker", "--statefulset=ps-server",
            "--poll_s=0.05", "--appear_timeout_s=1"] + list(extra)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)


def assert_scaled_to_zero_once(api):
    patches = api.patches()
    assert len(patches) == 1, api.requests
    method, path, headers, body = patches[0]
    assert path == SCALE_PATH
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert headers["Authorization"] == "Bearer " + TOKEN
    assert json.loads(body) == {"spec": {"replicas": 0}}


def test_complete_job_scales_servers_to_zero(tmp_path):
    with FakeApi([RUNNING, RUNNING, RUNNING, COMPLETE]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_scaled_to_zero_once(api)
    gets = [r for r in api.requests if r[0] == "GET"]
    assert len(gets) == 4  # polled until Complete, then no more
    assert all(r[2]["Authorization"] == "Bearer " + TOKEN for r in gets)
    assert "ended: Complete (CompletionsReached)" in proc.stderr


def test_failed_job_scales_servers_to_zero(tmp_path):
    with FakeApi([RUNNING, FAILED]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_scaled_to_zero_once(api)
    assert "ended: Failed (BackoffLimitExceeded)" in proc.stderr


def test_job_that_appears_late_is_waited_for(tmp_path):
    with FakeApi([NOT_FOUND, NOT_FOUND, RUNNING, COMPLETE]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_scaled_to_zero_once(api)


def test_job_deleted_after_it_was_seen_counts_as_ended(tmp_path):
    with FakeApi([RUNNING, RUNNING, NOT_FOUND]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_scaled_to_zero_once(api)
    assert "ended: deleted" in proc.stderr


def test_job_that_never_appears_fails_without_scaling(tmp_path):
    with FakeApi([NOT_FOUND]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 1
    assert api.patches() == []
    assert "did not appear within 1s" in proc.stderr


def test_server_errors_are_retried(tmp_path):
    unavailable = (503, {"message": "etcd leader changed"})
    with FakeApi([unavailable, unavailable, COMPLETE]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_scaled_to_zero_once(api)
    assert proc.stderr.count("HTTP 503; retrying") == 2


def test_forbidden_is_reported_as_rbac_without_scaling(tmp_path):
    forbidden = (403, {"message": "jobs.batch \"ps-worker\" is forbidden"})
    with FakeApi([forbidden]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 1
    assert api.patches() == []
    assert "HTTP 403" in proc.stderr and "is forbidden" in proc.stderr
    assert "needs get on batch/jobs ps-worker" in proc.stderr


def test_failed_scale_request_exits_1(tmp_path):
    with FakeApi([COMPLETE], scale_status=404) as api:
        proc = run_hook(api, tmp_path, "--statefulset=ps-servers")
    assert proc.returncode == 1
    assert "scaling statefulset train/ps-servers failed: HTTP 404" in proc.stderr


def test_conditions_that_are_not_true_do_not_end_the_wait(tmp_path):
    pending = (200, job(("Complete", "False", None), ("Suspended", "True", "JobSuspended")))
    with FakeApi([pending, pending, COMPLETE]) as api:
        proc = run_hook(api, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len([r for r in api.requests if r[0] == "GET"]) == 3


def test_bad_usage_exits_2(tmp_path):
    with FakeApi([COMPLETE]) as api:
        proc = run_hook(api, tmp_path, "--poll_s=soon")
    assert proc.returncode == 2
    assert "--poll_s must be a number" in proc.stderr
    assert api.requests == []


def test_every_statefulset_is_scaled_to_zero(tmp_path):
    # Replicated shards: one StatefulSet per replica rank.
    with FakeApi([RUNNING, COMPLETE], statefulsets=("ps-server", "ps-server-r1")) as api:
        proc = run_hook(api, tmp_path, "--statefulset=ps-server-r1")
    assert proc.returncode == 0, proc.stderr
    assert [(r[0], r[1], json.loads(r[3])) for r in api.patches()] == [
        ("PATCH", SCALE_PATH, {"spec": {"replicas": 0}}),
        ("PATCH", SCALE_PATH_R1, {"spec": {"replicas": 0}})]
    assert "statefulset train/ps-server-r1 scaled to 0" in proc.stderr


def test_a_failed_statefulset_does_not_keep_the_others_up(tmp_path):
    with FakeApi([COMPLETE], statefulsets=("ps-server-r1",)) as api:
        proc = run_hook(api, tmp_path, "--statefulset=ps-server-r1")
    assert proc.returncode == 1
    assert [r[1] for r in api.patches()] == [SCALE_PATH, SCALE_PATH_R1]
    assert "scaling statefulset train/ps-server failed: HTTP 404" in proc.stderr
    assert "statefulset train/ps-server-r1 scaled to 0" in proc.stderr


# ---------------------------------------------------------------------------
# --etcd: clearing the cluster's keys once no server pod runs.

ETCD = "/usr/bin/etcd"
ETCDCTL = "/usr/bin/etcdctl"
PREFIX = "/ps/train/"
# Keys of the cluster (what the replicas leave: in_sync has no lease).
CLUSTER_KEYS = {"/ps/train/shard/0/in_sync": "10.0.0.1:50051/1",
                "/ps/train/shard/1/in_sync": "10.0.0.2:50051/1",
                "/ps/train/shard/1/term": "7"}
# Just outside the prefix: another cluster whose id extends this one, one
# with another id, and the prefix without its trailing "/".
OUTSIDE_KEYS = {"/ps/trainx/k": "a", "/ps/other/k": "b", "/ps/train": "c"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """In the child before exec: SIGKILL when the test process dies, so a
    killed test leaves no etcd behind."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Etcd:
    """One etcd member on 127.0.0.1 with OS-picked ports (flags as
    server/replication/local_etcd.cc starts it), killed on exit. With
    `certs` (a make_certs.sh directory) it serves https only and asks every
    client for a certificate signed by its ca.pem (as
    replication.etcd_tls's etcd does)."""

    def __init__(self, tmp_path, certs=None):
        self.tmp_path = tmp_path
        self.certs = certs
        self.proc = None

    def tls_flags(self):
        if self.certs is None:
            return []
        c = self.certs
        return ["--cert-file=%s" % (c / "server.pem"), "--key-file=%s" % (c / "server.key"),
                "--trusted-ca-file=%s" % (c / "ca.pem"), "--client-cert-auth"]

    def __enter__(self):
        scheme = "http" if self.certs is None else "https"
        for attempt in range(5):  # a picked port can be taken before etcd binds it
            client, peer = free_port(), free_port()
            self.url = "%s://127.0.0.1:%d" % (scheme, client)
            peer_url = "http://127.0.0.1:%d" % peer
            log_path = self.tmp_path / ("etcd-%d.log" % attempt)
            with open(log_path, "w") as log:
                self.proc = subprocess.Popen(
                    [ETCD, "--name=hooktest", "--data-dir=%s" % (self.tmp_path / "etcd"),
                     "--listen-client-urls=" + self.url, "--advertise-client-urls=" + self.url,
                     "--listen-peer-urls=" + peer_url,
                     "--initial-advertise-peer-urls=" + peer_url,
                     "--initial-cluster=hooktest=" + peer_url, "--initial-cluster-state=new",
                     "--heartbeat-interval=25", "--election-timeout=250",
                     "--logger=zap", "--log-outputs=stderr"] + self.tls_flags(),
                    stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
            deadline = time.monotonic() + 20
            while self.proc.poll() is None and time.monotonic() < deadline:
                if "serving client traffic" in log_path.read_text():
                    return self
                time.sleep(0.05)
            self.stop()
            text = log_path.read_text()
            if "address already in use" not in text:
                raise RuntimeError("etcd did not start:\n" + text[-3000:])
        raise RuntimeError("etcd found no free ports in 5 attempts")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()

    def __exit__(self, *exc):
        self.stop()

    def ctl(self, *args):
        tls = [] if self.certs is None else [
            "--cacert=%s" % (self.certs / "ca.pem"), "--cert=%s" % (self.certs / "client.pem"),
            "--key=%s" % (self.certs / "client.key")]
        proc = subprocess.run([ETCDCTL, "--endpoints=" + self.url] + tls + list(args),
                              env=dict(os.environ, ETCDCTL_API="3"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def put(self, key, value):
        self.ctl("put", key, value)

    def all_keys(self):
        """Every key and value in etcd, through etcdctl (gRPC), not the
        gateway the hook uses."""
        lines = self.ctl("get", "--prefix", "").splitlines()
        return dict(zip(lines[0::2], lines[1::2]))


def started_etcd(tmp_path, certs=None):
    """A running Etcd holding CLUSTER_KEYS and OUTSIDE_KEYS."""
    if not (os.access(ETCD, os.X_OK) and os.access(ETCDCTL, os.X_OK)):
        pytest.fail("%s and %s are needed (Debian's etcd-server and etcd-client; "
                    ".ci/install_deps.sh installs them)" % (ETCD, ETCDCTL))
    server = Etcd(tmp_path, certs).__enter__()
    for key, value in {**CLUSTER_KEYS, **OUTSIDE_KEYS}.items():
        server.put(key, value)
    return server


@pytest.fixture
def etcd(tmp_path):
    server = started_etcd(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def certs(tmp_path):
    """make_certs.sh's CA, server and client certificates (openssl)."""
    subprocess.run(["bash", MAKE_CERTS, str(tmp_path / "certs")], check=True)
    return tmp_path / "certs"


@pytest.fixture
def tls_etcd(tmp_path, certs):
    server = started_etcd(tmp_path, certs)
    yield server
    server.stop()


def etcd_args(url):
    return ["--statefulset=ps-server-r1", "--etcd=" + url, "--etcd_prefix=" + PREFIX]


BOTH_SETS = ("ps-server", "ps-server-r1")


def test_etcd_prefix_is_cleared_once_no_server_pod_runs(tmp_path, etcd):
    # While a StatefulSet reports pods, a stopping primary rewrites its
    # shard's in_sync set: a hook that deleted before the pods were gone
    # would leave that key behind.
    seen_while_running = []

    def primary_still_writes(name):
        seen_while_running.append(sorted(k for k in etcd.all_keys() if k.startswith(PREFIX)))
        etcd.put("/ps/train/shard/0/in_sync", "10.0.0.1:50051/1")

    sts_answers = {
        # Scaled down but not yet observed (a stale 0), then pods stopping.
        "ps-server": [statefulset(2, 1, 0), statefulset(2, 2, 2), statefulset(2, 2, 1),
                      DRAINED],
        "ps-server-r1": [statefulset(3, 3, 1), statefulset(3, 3, 0)],
    }
    with FakeApi([RUNNING, COMPLETE], statefulsets=BOTH_SETS, sts_answers=sts_answers,
                 on_running=primary_still_writes) as api:
        proc = run_hook(api, tmp_path, *etcd_args(etcd.url), "--drain_timeout_s=30")
    assert proc.returncode == 0, proc.stderr
    assert len(api.patches()) == 2
    # It read each StatefulSet until its answer said no pod runs (the stale
    # 0 of generation 1 included), and no further.
    assert len(api.statefulset_gets("ps-server")) == 4
    assert len(api.statefulset_gets("ps-server-r1")) == 2
    # Every time a StatefulSet still had pods, the cluster's keys were there.
    assert len(seen_while_running) == 4
    assert all(keys == sorted(CLUSTER_KEYS) for keys in seen_while_running)
    # Then exactly the prefix's keys went, the rewritten one included.
    assert etcd.all_keys() == OUTSIDE_KEYS
    assert "deleted 3 etcd keys under /ps/train/" in proc.stderr
    assert "statefulset train/ps-server has not yet observed the scale-down; waiting" \
        in proc.stderr
    assert "statefulset train/ps-server still has 2 pods; waiting" in proc.stderr


def test_an_empty_prefix_is_deleted_as_zero_keys(tmp_path, etcd):
    etcd.ctl("del", "--prefix", PREFIX)
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS) as api:
        proc = run_hook(api, tmp_path, *etcd_args(etcd.url))
    assert proc.returncode == 0, proc.stderr
    assert "deleted 0 etcd keys under /ps/train/" in proc.stderr
    assert etcd.all_keys() == OUTSIDE_KEYS


def test_unreachable_etcd_exits_1_after_the_drain_timeout(tmp_path):
    url = "http://127.0.0.1:%d" % free_port()  # nothing listens there
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS) as api:
        start = time.monotonic()
        proc = run_hook(api, tmp_path, *etcd_args(url), "--drain_timeout_s=1")
        elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr
    assert elapsed >= 1
    assert len(api.patches()) == 2  # the servers were scaled down all the same
    assert ("etcd at %s did not delete /ps/train/ within 1s" % url) in proc.stderr
    assert "Failed to connect to 127.0.0.1" in proc.stderr
    assert ("etcdctl --endpoints=%s del --prefix /ps/train/" % url) in proc.stderr
    assert proc.stderr.count("deleting etcd keys under /ps/train/ at %s: " % url) >= 2


def test_pods_that_never_stop_leave_etcd_alone(tmp_path, etcd):
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS,
                 sts_answers={"ps-server-r1": [statefulset(2, 2, 1)]}) as api:
        proc = run_hook(api, tmp_path, *etcd_args(etcd.url), "--drain_timeout_s=0.5")
    assert proc.returncode == 1, proc.stderr
    assert "statefulset ps-server-r1 still had pods after 0.5s" in proc.stderr
    assert etcd.all_keys() == {**CLUSTER_KEYS, **OUTSIDE_KEYS}


def test_failed_scale_request_leaves_etcd_alone(tmp_path, etcd):
    with FakeApi([COMPLETE], statefulsets=("ps-server",)) as api:
        proc = run_hook(api, tmp_path, *etcd_args(etcd.url))
    assert proc.returncode == 1
    assert "scaling statefulset train/ps-server-r1 failed: HTTP 404" in proc.stderr
    assert "not clearing etcd's /ps/train/: servers may still run" in proc.stderr
    assert api.statefulset_gets("ps-server") == []
    assert etcd.all_keys() == {**CLUSTER_KEYS, **OUTSIDE_KEYS}


@pytest.mark.parametrize("answer, message", [
    ((403, {"message": "statefulsets.apps \"ps-server\" is forbidden"}),
     "needs get on apps/statefulsets ps-server"),
    ((404, {"message": "statefulsets.apps \"ps-server\" not found"}),
     "statefulset train/ps-server is gone"),
])
def test_unreadable_statefulset_leaves_etcd_alone(tmp_path, etcd, answer, message):
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS,
                 sts_answers={"ps-server": [answer]}) as api:
        proc = run_hook(api, tmp_path, *etcd_args(etcd.url))
    assert proc.returncode == 1
    assert message in proc.stderr
    assert etcd.all_keys() == {**CLUSTER_KEYS, **OUTSIDE_KEYS}


@pytest.mark.parametrize("args, message", [
    (["--etcd=http://127.0.0.1:2379"], "--etcd and --etcd_prefix go together"),
    (["--etcd_prefix=/ps/train/"], "--etcd and --etcd_prefix go together"),
    (["--etcd=127.0.0.1:2379", "--etcd_prefix=/ps/train/"], "is not http://HOST:PORT"),
    (["--etcd=http://127.0.0.1:2379", "--etcd_prefix=ps/train/"], "must start and end with '/'"),
    (["--etcd=http://127.0.0.1:2379", "--etcd_prefix=/ps/train"], "must start and end with '/'"),
    (["--etcd=http://127.0.0.1:2379", "--etcd_prefix=/"], "must start and end with '/'"),
    (["--etcd=http://127.0.0.1:2379", "--etcd_prefix=/ps/train/",
      "--drain_timeout_s=5m"], "--drain_timeout_s must be a number"),
])
def test_bad_etcd_usage_exits_2(tmp_path, args, message):
    with FakeApi([COMPLETE]) as api:
        proc = run_hook(api, tmp_path, *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "--etcd=URL --etcd_prefix=/ps/<cluster_id>/" in proc.stderr  # the usage lines
    assert api.requests == []


# ---------------------------------------------------------------------------
# --etcd with TLS (replication.etcd_tls): https and a client certificate.

def tls_args(certs, client="client"):
    return ["--etcd_ca_file=%s" % (certs / "ca.pem"),
            "--etcd_cert_file=%s" % (certs / (client + ".pem")),
            "--etcd_key_file=%s" % (certs / (client + ".key"))]


def test_tls_etcd_prefix_is_cleared_with_the_client_certificate(tmp_path, certs, tls_etcd):
    assert tls_etcd.url.startswith("https://")
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS) as api:
        proc = run_hook(api, tmp_path, *etcd_args(tls_etcd.url), *tls_args(certs))
    assert proc.returncode == 0, proc.stderr
    assert "deleted 3 etcd keys under /ps/train/" in proc.stderr
    assert tls_etcd.all_keys() == OUTSIDE_KEYS


# etcd refuses a client certificate after the handshake: curl sees a reset.
REFUSED = "(TLS: does etcd trust the client certificate in --etcd_cert_file"


@pytest.mark.parametrize("credentials, error", [
    # etcd asks for a client certificate: none offered.
    (lambda certs: ["--etcd_ca_file=%s" % (certs / "ca.pem")], REFUSED),
    # One signed by a CA etcd does not trust.
    (lambda certs: tls_args(certs, "rogue_client"), REFUSED),
    # etcd's certificate checked against a CA that did not sign it.
    (lambda certs: ["--etcd_ca_file=%s" % (certs / "rogue_ca.pem"),
                    "--etcd_cert_file=%s" % (certs / "client.pem"),
                    "--etcd_key_file=%s" % (certs / "client.key")],
     "SSL certificate problem"),
])
def test_tls_etcd_refusing_the_hook_keeps_the_keys(tmp_path, certs, tls_etcd, credentials,
                                                   error):
    with FakeApi([COMPLETE], statefulsets=BOTH_SETS) as api:
        proc = run_hook(api, tmp_path, *etcd_args(tls_etcd.url), *credentials(certs),
                        "--drain_timeout_s=0.5")
    assert proc.returncode == 1, proc.stderr
    assert ("etcd at %s did not delete /ps/train/ within 0.5s" % tls_etcd.url) in proc.stderr
    assert error in proc.stderr
    assert tls_etcd.all_keys() == {**CLUSTER_KEYS, **OUTSIDE_KEYS}


@pytest.mark.parametrize("args, message", [
    (["--etcd=http://127.0.0.1:2379", "--etcd_prefix=/ps/train/", "--etcd_ca_file=/etc/hosts"],
     "--etcd_ca_file, --etcd_cert_file and --etcd_key_file need --etcd=https://HOST:PORT "
     "(got 'http://127.0.0.1:2379')"),
    (["--etcd=https://127.0.0.1:2379", "--etcd_prefix=/ps/train/",
      "--etcd_cert_file=/etc/hosts"],
     "--etcd_cert_file and --etcd_key_file go together"),
    (["--etcd=https://127.0.0.1:2379", "--etcd_prefix=/ps/train/",
      "--etcd_ca_file=/nonexistent/ca.pem"],
     "--etcd_ca_file '/nonexistent/ca.pem' cannot be read (mount the Secret holding "
     "replication.etcd_tls's files into this Job too)"),
])
def test_bad_etcd_tls_usage_exits_2_before_touching_anything(tmp_path, args, message):
    with FakeApi([COMPLETE]) as api:
        proc = run_hook(api, tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert api.requests == []
