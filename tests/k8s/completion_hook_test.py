#!/usr/bin/python3
"""Tests of deploy/docker/ps_completion_hook.sh against a fake Kubernetes API
server (HTTP on 127.0.0.1, an OS-picked port) that serves the worker Job from
a script of answers and records the scale requests.

Run by //tests/k8s:completion_hook_test (pytest, one JUnit case per test).
"""

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


HERE = os.path.dirname(os.path.realpath(__file__))
HOOK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy", "docker",
                    "ps_completion_hook.sh")
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


class FakeApi:
    """Answers GETs of the Job from `job_answers` (the last one repeats) and
    PATCHes of the scale subresource of the StatefulSets `statefulsets` with
    `scale_status` (others: 404); records every request as (method, path,
    headers, body)."""

    def __init__(self, job_answers, scale_status=200, statefulsets=("ps-server",)):
        self.job_answers = list(job_answers)
        self.scale_status = scale_status
        self.scale_paths = [SCALE_PREFIX + name + "/scale" for name in statefulsets]
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
