"""Each status family raises its own exception with the message (the
server's, where the server produced the error)."""

import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

import local_processes
import ps_client
from ps_client import errors


@pytest.mark.parametrize("code,cls", [
    (1, ps_client.Cancelled), (2, ps_client.Unknown),
    (3, ps_client.InvalidArgument), (4, ps_client.DeadlineExceeded),
    (5, ps_client.NotFound), (6, ps_client.AlreadyExists),
    (7, ps_client.PermissionDenied), (8, ps_client.ResourceExhausted),
    (9, ps_client.FailedPrecondition), (10, ps_client.Aborted),
    (11, ps_client.OutOfRange), (12, ps_client.Unimplemented),
    (13, ps_client.Internal), (14, ps_client.Unavailable),
    (15, ps_client.DataLoss), (16, ps_client.Unauthenticated)])
def test_every_code_has_its_class(code, cls):
    error = errors.from_status(code, "the message")
    assert type(error) is cls and isinstance(error, ps_client.PsError)
    assert (error.code, error.message) == (code, "the message")
    assert str(error) == f"{cls.code_name}: the message"


def test_unknown_code_keeps_its_number():
    error = errors.from_status(99, "m")
    assert type(error) is ps_client.PsError and error.code == 99


def test_builtin_bases():
    assert issubclass(ps_client.InvalidArgument, ValueError)
    assert issubclass(ps_client.NotFound, LookupError)
    assert issubclass(ps_client.OutOfRange, IndexError)
    assert issubclass(ps_client.Unavailable, ConnectionError)


def test_not_found(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.NotFound) as e:
            client.get_table("nope")
        assert e.value.message == "no table named 'nope'"
        assert e.value.code == 5


def test_out_of_range(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.OutOfRange) as e:
            client.pull_dense("w", offset=8, count=4).wait()
        assert e.value.message == ("range [8, 12) is outside table 'w' of 10 "
                                   "elements")


@pytest.mark.parametrize("call", [
    lambda c: c.pull_dense("w", offset=-1),
    lambda c: c.pull_dense("w", offset=-1, count=2),
    lambda c: c.pull_dense("w", offset=-1, out=np.zeros(2, np.float32)),
    lambda c: c.pull_dense("w", offset=11),  # to the end: no length fits
    lambda c: c.push_dense("w", np.zeros(2, np.float32), offset=-3),
    lambda c: c.push_pull_dense("w", np.zeros(2, np.float32), offset=-3),
])
def test_offsets_outside_the_table_are_out_of_range(cluster, call):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.OutOfRange) as e:
            call(client).wait()
        assert e.value.message.startswith("range [")
        assert e.value.message.endswith(", ...) is outside table 'w' of 10 elements")
        # Up to the end is an empty pull, not an error.
        assert client.pull_dense("w", offset=10).wait().shape == (0,)


def test_invalid_argument_from_the_server(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        grads = np.zeros(10, np.float32)
        grads[3] = np.nan
        future = client.push_dense("w", grads)
        with pytest.raises(ps_client.InvalidArgument) as e:
            future.wait()
        assert ("gradient 3 is not finite (nan); the request was not applied"
                in e.value.message)
        # exception() returns it without raising; the server keeps serving.
        assert isinstance(future.exception(), ps_client.InvalidArgument)
        np.testing.assert_array_equal(client.pull_dense("w").wait(),
                                      np.zeros(10))


def test_failed_precondition_from_the_server(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.FailedPrecondition) as e:
            client.checkpoint()
        assert ("checkpoints are off: the cluster config has no "
                "server.checkpoint_dir") in e.value.message


def test_failed_precondition_non_worker_push_to_sync_table(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.FailedPrecondition,
                           match="a client that is not a worker may only "
                           "push to async tables; table 's' is sync"):
            client.push_dense("s", np.zeros(8, np.float32)).wait()
        with pytest.raises(ps_client.FailedPrecondition,
                           match=r"Clock\(\) is only for workers"):
            client.clock()


def test_already_exists(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.AlreadyExists) as e:
            client.create_table("w", "dense", size=3)
        assert e.value.message == "table 'w' already exists (id 0)"


def test_unauthenticated_carries_the_servers_message(make_cluster):
    cluster = make_cluster('auth_token: "right"\n'
                           "tables:\n  - {name: w, kind: dense, size: 4}\n",
                           num_servers=1)
    with pytest.raises(ps_client.Unauthenticated, match="invalid bearer "
                       "token"):
        ps_client.connect(servers=cluster.addresses, auth_token="wrong")
    with ps_client.connect(servers=cluster.addresses,
                           auth_token="right") as client:
        assert client.pull_dense("w").wait().shape == (4,)


def test_unavailable_when_nothing_listens(make_cluster):
    cluster = make_cluster("tables:\n  - {name: w, kind: dense, size: 4}\n",
                           num_servers=1)
    address = cluster.addresses[0]
    cluster.stop()
    with pytest.raises(ps_client.Unavailable) as e:
        ps_client.connect(servers=[address], rpc_timeout_ms=500)
    assert f"server {address} (shard 0) not ready within 500 ms" in \
        e.value.message


def test_resource_exhausted_for_a_message_over_the_servers_limit(
        make_cluster):
    cluster = make_cluster(
        "server:\n  max_message_bytes: 65536\n"
        "client:\n  chunk_bytes: 1048576\n  max_reconnect_attempts: 1\n"
        "tables:\n  - {name: big, kind: dense, size: 262144}\n",
        num_servers=1)
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ps_client.ResourceExhausted) as e:
            client.push_dense("big", np.zeros(262144, np.float32)).wait()
        assert "larger than max" in e.value.message


def test_cancelled_when_the_client_closes_under_a_waiting_pull(cluster):
    a = ps_client.connect(cluster.client_config_path, worker_index=0)
    b = ps_client.connect(cluster.client_config_path, worker_index=1)
    a.push_dense("s", np.ones(8, np.float32)).wait()
    a.clock()
    # Step 0 is not complete (worker 1 never clocked): this pull waits.
    future = a.pull_dense("s")
    time.sleep(0.2)
    assert not future.done()
    closer = threading.Thread(target=a.close)
    closer.start()
    with pytest.raises(ps_client.Cancelled):
        future.wait()
    closer.join(10)
    with pytest.raises(ps_client.FailedPrecondition, match="the client is "
                       "closed"):
        a.pull_dense("w")
    b.close()


def test_unavailable_from_a_paused_server(make_cluster):
    # A control call's deadline means the server did not answer in time:
    # the SDK reports that as UNAVAILABLE (client_impl.cc, Annotate), with
    # gRPC's reason; DeadlineExceeded never reaches the caller.
    cluster = make_cluster("tables:\n  - {name: w, kind: dense, size: 4}\n",
                           num_servers=1)
    with ps_client.connect(servers=cluster.addresses,
                           rpc_timeout_ms=300) as client:
        assert client.stats()[0].shard_index == 0
        pid = cluster.server_pid(0)
        os.kill(pid, signal.SIGSTOP)
        try:
            # The stop is asynchronous: a loaded machine may run a server
            # thread (and answer) after kill() returned.
            local_processes.wait_for(lambda: local_processes.all_stopped(pid),
                                     10, "the server did not stop")
            start = time.monotonic()
            with pytest.raises(ps_client.Unavailable) as e:
                client.stats()
            assert e.value.code == 14
            assert e.value.message == (
                f"GetStats on server {cluster.addresses[0]} (shard 0): "
                "Deadline Exceeded")
            assert time.monotonic() - start < 5
        finally:
            os.kill(pid, signal.SIGCONT)
        # Resumed, the same client is served again.
        assert client.stats()[0].shard_index == 0


def test_internal_when_the_checkpoint_directory_became_a_file(make_cluster,
                                                              tmp_path):
    directory = tmp_path / "checkpoints"
    cluster = make_cluster(
        f"server:\n  checkpoint_dir: {directory}\n"
        "tables:\n  - {name: w, kind: dense, size: 4}\n", num_servers=1)
    with ps_client.connect(servers=cluster.addresses) as client:
        assert len(client.checkpoint()) == 1
        # The volume is swapped for a file under the running server.
        shutil.rmtree(directory)
        directory.write_text("not a directory")
        with pytest.raises(ps_client.Internal) as e:
            client.checkpoint()
        assert e.value.code == 13
        assert f"creating directory {directory}/" in e.value.message
        assert e.value.message.endswith("Not a directory")
        # The server keeps serving.
        np.testing.assert_array_equal(client.pull_dense("w").wait(),
                                      np.zeros(4))


@pytest.mark.skipif(not os.access(local_processes.ETCD, os.X_OK),
                    reason="etcd-server is not installed")
def test_unimplemented_from_a_grpc_server_that_is_not_a_parameter_server(
        tmp_path):
    # etcd speaks gRPC but has no ps.ParameterServer service: an address
    # that points at the wrong service fails at once, with gRPC's reason.
    processes = local_processes.Processes()
    try:
        port = local_processes.start_etcd(processes, tmp_path)
        start = time.monotonic()
        with pytest.raises(ps_client.Unimplemented) as e:
            ps_client.connect(servers=[f"127.0.0.1:{port}"])
        assert e.value.code == 12
        assert "unknown service ps.proto.ParameterServer" in e.value.message
        assert time.monotonic() - start < 5
    finally:
        processes.stop()
