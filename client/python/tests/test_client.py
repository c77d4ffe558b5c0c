"""ps_client against real ps_server processes: data calls, buffers, tables."""

import numpy as np
import pytest
import torch

import ps_client


def test_dense_push_then_pull_reads_back_the_sgd_update(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        grads = np.arange(10, dtype=np.float32)
        assert client.push_dense("w", grads).wait() is None
        values = client.pull_dense("w").wait()
        assert values.dtype == np.float32 and values.shape == (10,)
        np.testing.assert_array_equal(values, -grads)
        # A sub-range, into a caller's array: the same object comes back.
        out = np.full(3, 7.0, dtype=np.float32)
        assert client.pull_dense("w", offset=4, out=out).wait() is out
        np.testing.assert_array_equal(out, [-4, -5, -6])
        # push-pull: one round trip, values after the update.
        after = client.push_pull_dense("w", np.ones(2, np.float32),
                                       offset=8).wait()
        np.testing.assert_array_equal(after, [-9, -10])


def test_torch_tensors_pass_without_copies(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        w = client.get_table("w")
        client.push_dense(w, torch.full((10,), 2.0)).wait()
        out = torch.zeros(2, 5)
        assert client.pull_dense(w, out=out).wait() is out
        assert torch.equal(out, torch.full((2, 5), -2.0))
        # A view of a bigger tensor is written in place.
        big = torch.zeros(20)
        client.pull_dense(w, out=big[5:15]).wait()
        assert torch.equal(big[5:15], torch.full((10,), -2.0))
        assert torch.equal(big[:5], torch.zeros(5))


def test_a_table_is_named_by_info_id_or_name_alike(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        w = client.get_table("w")
        client.push_dense(w, np.ones(10, np.float32)).wait()
        for table in (w, w.table_id, np.uint32(w.table_id), "w"):
            out = np.zeros(10, np.float32)
            client.pull_dense(table, out=out).wait()
            np.testing.assert_array_equal(out, np.full(10, -1.0))
        with pytest.raises(TypeError, match="table: expected a TableInfo, a "
                           "table id or a table name; got <class 'float'>"):
            client.pull_dense(1.0, out=np.zeros(10, np.float32))
        with pytest.raises(ps_client.errors.NotFound,
                           match="no table with id -1"):
            client.pull_dense(-1, out=np.zeros(10, np.float32))
        with pytest.raises(ps_client.errors.NotFound,
                           match="no table named 'nope'"):
            client.push_dense("nope", np.zeros(10, np.float32))


def test_zero_copy_push_sends_from_the_callers_buffer(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        grads = np.full(10, 3.0, dtype=np.float32)
        client.push_dense("w", grads, zero_copy=True).wait()
        np.testing.assert_array_equal(client.pull_dense("w").wait(),
                                      np.full(10, -3.0))


def test_sparse_duplicates_are_summed_and_rows_scatter_back(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        keys = np.array([5, 7, 5, 2**63 + 1], dtype=np.uint64)
        grads = np.arange(16, dtype=np.float32).reshape(4, 4)
        client.push_sparse("e", keys, grads).wait()
        rows = client.pull_sparse("e", [7, 5, 2**63 + 1, 5]).wait()
        assert rows.shape == (4, 4)
        np.testing.assert_array_equal(rows[0], -grads[1])
        np.testing.assert_array_equal(rows[1], -(grads[0] + grads[2]))
        np.testing.assert_array_equal(rows[2], -grads[3])
        np.testing.assert_array_equal(rows[3], rows[1])
        # int64 ids (torch has no uint64) are the same ids reinterpreted.
        ids = torch.tensor([[5, 7], [7, -(2**63) + 1]], dtype=torch.int64)
        out = client.pull_sparse("e", ids).wait()
        assert out.shape == (2, 2, 4)
        np.testing.assert_array_equal(out[1, 1], -grads[3])
        after = client.push_pull_sparse("e", [7], np.ones(4, np.float32)).wait()
        np.testing.assert_array_equal(after[0], -grads[1] - 1)


def test_wrong_buffers_are_type_errors_naming_the_argument(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(TypeError, match=r"grads: expected a C-contiguous "
                           r"float32 buffer .*element format 'd'"):
            client.push_dense("w", np.zeros(10))
        with pytest.raises(TypeError, match="out: expected a writable "
                           "C-contiguous float32 buffer"):
            client.pull_dense("w", out=np.zeros(20, np.float32)[::2])
        read_only = np.zeros(10, np.float32)
        read_only.setflags(write=False)
        with pytest.raises(TypeError, match="out: expected a writable"):
            client.pull_dense("w", out=read_only)
        with pytest.raises(TypeError, match="keys: expected a C-contiguous "
                           "uint64 or int64 buffer"):
            client.pull_sparse("e", np.zeros(2, np.int32))
        with pytest.raises(TypeError, match="no buffer protocol"):
            client.push_dense("w", object())


def test_tables_are_listed_created_and_validated(cluster):
    with ps_client.connect(cluster.client_config_path) as client:
        assert [t.name for t in client.list_tables()] == ["w", "e", "s"]
        e = client.get_table("e")
        assert (e.kind, e.dim, e.consistency, e.table_id) == ("sparse", 4,
                                                              "async", 1)
        t = client.create_table("extra", "dense", size=6,
                                optimizer={"type": "sgd",
                                           "learning_rate": 0.5},
                                initializer={"type": "constant",
                                             "value": 2.0})
        assert (t.table_id, t.size) == (3, 6)
        client.push_dense(t, np.full(6, 2.0, np.float32)).wait()
        np.testing.assert_array_equal(client.pull_dense(t).wait(),
                                      np.full(6, 1.0))
        # Another client finds it by name.
        with ps_client.connect(servers=cluster.addresses) as other:
            assert other.get_table("extra").size == 6
        with pytest.raises(ps_client.InvalidArgument,
                           match=r"tables\[0\].optimizer.type: unknown "
                           r"optimizer 'nope'"):
            client.create_table("bad", "dense", size=1,
                                optimizer={"type": "nope"})


def test_connect_from_addresses_and_parsed_config(cluster):
    config = ps_client.load_cluster_config(cluster.config_path)
    assert config.num_workers == 2
    config.servers = cluster.addresses
    with ps_client.connect(config, worker_index=1) as client:
        assert client.worker_index == 1 and client.num_servers == 2
        assert client.clock() == 1 and client.current_clock == 1
    with ps_client.connect(servers=cluster.addresses,
                           rpc_timeout_ms=5000) as client:
        assert client.worker_index == -1
        stats = client.stats()
        assert [s.shard_index for s in stats] == [0, 1]
        assert [t.name for t in stats[0].tables] == ["w", "e", "s"]
    with pytest.raises(TypeError, match="unknown client options"):
        ps_client.connect(servers=cluster.addresses, rpc_timeout=1)


def test_checkpoint_returns_one_file_per_shard(make_cluster, tmp_path):
    body = f"server:\n  checkpoint_dir: {tmp_path}\n" + \
        "tables:\n  - {name: w, kind: dense, size: 4}\n"
    cluster = make_cluster(body, num_servers=2)
    with ps_client.connect(cluster.client_config_path) as client:
        paths = client.checkpoint()
        assert len(paths) == 2
        assert "shard-0-of-2" in paths[0] and "shard-1-of-2" in paths[1]


def test_barrier_waits_for_every_worker(cluster):
    import threading
    a = ps_client.connect(cluster.client_config_path, worker_index=0)
    b = ps_client.connect(cluster.client_config_path, worker_index=1)
    passed = []
    thread = threading.Thread(target=lambda: (a.barrier(), passed.append(1)))
    thread.start()
    thread.join(0.3)
    assert not passed  # worker 1 has not arrived
    b.barrier()
    thread.join(10)
    assert passed == [1]
    a.close()
    b.close()
