"""A model trained through the cluster reloads in plain PyTorch: train with
ps_client.nn.EmbeddingBag, export with `ps_ctl export`, read the file with
ps_client.embedding_file, load torch.nn.EmbeddingBag weights by id and
compare outputs."""

import os
import subprocess

import numpy as np
import pytest
import torch

import ps_client
import ps_client.nn
from ps_client import embedding_file

DIM = 8
TABLES = f"""
tables:
  - name: emb
    kind: sparse
    dim: {DIM}
    initializer: {{type: normal, stddev: 0.1, seed: 7}}
    optimizer: {{type: adagrad, learning_rate: 0.1, initial_accumulator: 0.1}}
  - name: emb16
    kind: sparse
    dim: {DIM}
    storage_type: bfloat16
    initializer: {{type: uniform, seed: 8}}
    optimizer: {{type: sgd, learning_rate: 0.5}}
"""


def ps_ctl():
    return os.path.join(os.environ["TEST_SRCDIR"], "ps", "deploy", "ctl",
                        "ps_ctl")


def export(cluster, table, path, with_state=False):
    args = [ps_ctl(), "--servers", ",".join(cluster.addresses), "export",
            "--table", table, "--out", path]
    if with_state:
        args.append("--with_state")
    proc = subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    return embedding_file.read(path)


def bags(generator, vocab, batch=16, per_bag=5):
    picks = torch.randint(0, len(vocab), (batch, per_bag), generator=generator)
    return vocab[picks]


def test_trained_table_reloads_in_plain_pytorch(make_cluster, tmp_path):
    cluster = make_cluster(TABLES, num_servers=2)
    g = torch.Generator().manual_seed(1)
    # Large int64 ids, spread over both shards.
    vocab = torch.randint(0, 2**62, (300,), generator=g)
    with ps_client.connect(cluster.client_config_path) as client:
        emb = ps_client.nn.EmbeddingBag(client, "emb", mode="mean")
        head = torch.nn.Linear(DIM, 1)
        seen = []
        for _ in range(6):
            ids = bags(g, vocab)
            seen.append(ids.reshape(-1))
            y = torch.randint(0, 2, (ids.shape[0], 1), generator=g).float()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                head(emb(ids)), y)
            loss.backward()
        emb.flush()
        f = export(cluster, "emb", str(tmp_path / "emb.psemb"),
                   with_state=True)
        assert (f.table, f.optimizer, f.dim, f.value_type, f.num_shards) == (
            "emb", "adagrad", DIM, "float32", 2)
        assert f.state.shape == (1, len(f), DIM)
        assert np.all(f.state >= np.float32(0.1))
        # The file's ids are exactly the rows the training created.
        stats = client.stats()
        emb_stats = [t for s in stats for t in s.tables if t.name == "emb"]
        assert len(f) == sum(t.num_rows for t in emb_stats)
        assert len(f) == sum(t.rows_admitted for t in emb_stats)
        assert sum(t.rows_evicted for t in emb_stats) == 0
        assert all(t.bytes_per_row == 2 * 4 * DIM + 24 for t in emb_stats)
        # Plain torch: weights by id, inputs mapped to row indices.
        index = f.index()
        plain = torch.nn.EmbeddingBag.from_pretrained(
            torch.from_numpy(f.values), mode="mean")
        trained = torch.unique(torch.cat(seen))  # ids with rows
        assert len(f) == len(trained)
        with torch.no_grad():
            for _ in range(3):
                ids = bags(g, trained)
                rows = torch.tensor([[index[int(i) % 2**64] for i in bag]
                                     for bag in ids.tolist()])
                served = emb(ids)
                reloaded = plain(rows)
                assert torch.equal(served, reloaded)
                assert torch.equal(head(served), head(reloaded))
        # rows_for: the same rows by id, in the caller's order.
        some = trained[:7].numpy()
        assert np.array_equal(f.rows_for(some),
                              emb.client.pull_sparse("emb", some).wait())


def test_bfloat16_rows_read_back_as_pulled(make_cluster, tmp_path):
    cluster = make_cluster(TABLES, num_servers=2)
    ids = np.arange(1, 200, dtype=np.uint64) * np.uint64(7919)
    with ps_client.connect(cluster.client_config_path) as client:
        grads = np.random.default_rng(2).standard_normal(
            (len(ids), DIM)).astype(np.float32)
        client.push_sparse("emb16", ids, grads).wait()
        pulled = client.pull_sparse("emb16", ids).wait()
    f = export(cluster, "emb16", str(tmp_path / "emb16.psemb"))
    assert f.value_type == "bfloat16" and f.state is None
    assert np.array_equal(f.rows_for(ids), pulled)
    # Every value is a bfloat16: its low 16 bits are zero.
    assert not np.any(f.values.view(np.uint32) & 0xFFFF)


def test_damaged_files_are_refused(make_cluster, tmp_path):
    cluster = make_cluster(TABLES, num_servers=1)
    with ps_client.connect(cluster.client_config_path) as client:
        client.pull_sparse("emb", np.arange(10, dtype=np.uint64)).wait()
    path = tmp_path / "e.psemb"
    f = export(cluster, "emb", str(path))
    assert len(f) == 10
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(ValueError, match="truncated"):
        embedding_file.read(str(path))
    flipped = bytearray(data)
    flipped[300] ^= 1
    path.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="checksum mismatch"):
        embedding_file.read(str(path))
    path.write_bytes(b"junk" * 100)
    with pytest.raises(ValueError, match="not an embedding export file"):
        embedding_file.read(str(path))
