"""ps_client.nn against real servers, compared with plain local PyTorch."""

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ps_client
import ps_client.nn

IN, HIDDEN, OUT = 6, 5, 3
NUM_PARAMS = IN * HIDDEN + HIDDEN + HIDDEN * OUT + OUT  # 53


def small_model():
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, OUT))


def dense_table(consistency, staleness=""):
    return f"""
tables:
  - name: model
    kind: dense
    size: {NUM_PARAMS}
    consistency: {consistency}
{staleness}
    initializer: {{type: uniform, low: -0.5, high: 0.5, seed: 11}}
    optimizer: {{type: momentum, learning_rate: 0.2, momentum: 0.5}}
"""


def batches(workers, batch, steps, seed=3):
    """Per step: a list of one (x, y) per worker."""
    g = torch.Generator().manual_seed(seed)
    return [[(torch.randn(batch, IN, generator=g),
              torch.randint(0, OUT, (batch,), generator=g))
             for _ in range(workers)] for _ in range(steps)]


def train_through_cluster(cluster, data, worker):
    """One worker's loop, as a user writes it (DenseParameters)."""
    with ps_client.connect(cluster.client_config_path,
                           worker_index=worker) as client:
        model = small_model()
        params = ps_client.nn.DenseParameters(client, model, "model")
        for step in data:
            x, y = step[worker]
            params.pull()
            F.cross_entropy(model(x), y).backward()
            params.push()


def reference_training(initial, data, lr=0.2, momentum=0.5):
    """Local PyTorch: one model, batch = every worker's batch of the step."""
    model = small_model()
    # A copy: vector_to_parameters makes the parameters views of it.
    torch.nn.utils.vector_to_parameters(torch.tensor(initial),
                                        model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    for step in data:
        x = torch.cat([x for x, _ in step])
        y = torch.cat([y for _, y in step])
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach()


def max_relative_error(a, b):
    """max |a - b| / max(|b|, 1e-2), the measure of the C++ equivalence
    tests (worker/ps_worker_equivalence_test.cc)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-2)))


def run_workers(cluster, data, workers):
    errors = []

    def run(i):
        try:
            train_through_cluster(cluster, data, i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


@pytest.mark.parametrize("consistency,workers", [("sync", 2), ("sync", 3),
                                                 ("async", 1), ("ssp", 1)])
def test_training_equals_local_torch_with_batch_w_times_b(
        make_cluster, consistency, workers):
    staleness = "    staleness: 1" if consistency == "ssp" else ""
    cluster = make_cluster(dense_table(consistency, staleness),
                           num_servers=2, num_workers=workers)
    with ps_client.connect(cluster.client_config_path) as observer:
        initial = observer.pull_dense("model").wait()
    data = batches(workers, batch=4, steps=8)
    run_workers(cluster, data, workers)
    with ps_client.connect(cluster.client_config_path) as observer:
        final = observer.pull_dense("model").wait()
    reference = reference_training(initial, data)
    error = max_relative_error(final, reference)
    moved = float(np.max(np.abs(reference.numpy() - initial)))
    print(f"{consistency} W={workers}: max relative error {error:.3g}, "
          f"largest parameter change {moved:.3g}")
    assert error < 1e-5
    assert moved > 0.05  # training moved the parameters


def test_dense_parameters_rejects_a_table_too_small(make_cluster):
    cluster = make_cluster("tables:\n  - {name: t, kind: dense, size: 10}\n",
                           num_servers=1)
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ValueError, match="the module's 53 parameters at "
                           "offset 0 do not fit table 't' of 10 elements"):
            ps_client.nn.DenseParameters(client, small_model(), "t")


def test_dense_parameters_survives_zero_grad_set_to_none(make_cluster):
    cluster = make_cluster(dense_table("async"), num_servers=1)
    with ps_client.connect(cluster.client_config_path) as client:
        model = small_model()
        params = ps_client.nn.DenseParameters(client, model, "model")
        params.pull()
        before = params.values.clone()
        model.zero_grad(set_to_none=True)
        x, y = torch.randn(4, IN), torch.randint(0, OUT, (4,))
        F.cross_entropy(model(x), y).backward()
        grads = torch.nn.utils.parameters_to_vector(
            [p.grad for p in model.parameters()]).clone()
        params.push()
        params.pull()
        # momentum's first step: w -= lr * g
        torch.testing.assert_close(params.values, before - 0.2 * grads)


SPARSE = """
tables:
  - name: emb
    kind: sparse
    dim: 3
    consistency: async
    initializer: {type: normal, mean: 0.0, stddev: 0.5, seed: 5}
    optimizer: {type: sgd, learning_rate: 1.0}
"""


class RecordingClient:
    """Passes calls to a client and records the ids of every sparse pull."""

    def __init__(self, client):
        self._client = client
        self.pulled = []

    def pull_sparse(self, table, keys, *, out=None):
        self.pulled.append(keys.tolist())
        return self._client.pull_sparse(table, keys, out=out)

    def __getattr__(self, name):
        return getattr(self._client, name)


# Bags with duplicates within and across bags; id 0 is the padding id of
# the padding cases.
IDS = torch.tensor([3, 3, 7, 3, 7, 9, 3, 0, 12, 0], dtype=torch.int64)
OFFSETS = torch.tensor([0, 4, 6, 8], dtype=torch.int64)


def reference_bag(rows_by_id, mode, padding_idx, per_sample_weights):
    """nn.EmbeddingBag over a local weight holding the same rows."""
    num = int(IDS.max()) + 1
    bag = torch.nn.EmbeddingBag(num, 3, mode=mode, padding_idx=padding_idx)
    with torch.no_grad():
        bag.weight.zero_()
        for i, row in rows_by_id.items():
            bag.weight[i] = row
    out = bag(IDS, OFFSETS, per_sample_weights=per_sample_weights)
    return bag, out


@pytest.mark.parametrize("mode,padding_idx,weighted", [
    ("sum", None, False), ("mean", None, False), ("max", None, False),
    ("sum", 0, False), ("mean", 0, False), ("sum", None, True)])
def test_embedding_bag_gradients_equal_torch(make_cluster, mode, padding_idx,
                                             weighted):
    cluster = make_cluster(SPARSE, num_servers=2)
    with ps_client.connect(cluster.client_config_path) as raw:
        client = RecordingClient(raw)
        emb = ps_client.nn.EmbeddingBag(client, "emb", mode=mode,
                                        padding_idx=padding_idx)
        ids = sorted(set(IDS.tolist()) - {padding_idx})
        before = dict(zip(ids, torch.from_numpy(
            raw.pull_sparse("emb", ids).wait())))
        weights = torch.rand(len(IDS)) if weighted else None
        out = emb(IDS, OFFSETS, per_sample_weights=weights)
        # One pull per batch of its unique ids (without the padding id).
        assert client.pulled[-1:] == [ids] or (
            padding_idx is not None and sum(client.pulled, []) == ids)
        bag, expected = reference_bag(before, mode, padding_idx, weights)
        torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)

        upstream = torch.randn(out.shape, generator=torch.Generator()
                               .manual_seed(1))
        (out * upstream).sum().backward()
        (expected * upstream).sum().backward()
        emb.flush()
        after = torch.from_numpy(raw.pull_sparse("emb", ids).wait())
        # SGD, learning rate 1: the server applied exactly -gradient.
        for k, i in enumerate(ids):
            torch.testing.assert_close(after[k] - before[i],
                                       -bag.weight.grad[i], rtol=1e-5,
                                       atol=1e-6)
        if padding_idx is not None:
            # The padding id was never pulled, so never created.
            stats = raw.stats()
            assert sum(t.num_rows for s in stats for t in s.tables) == \
                len(ids)


def test_embedding_unpooled_and_2d_bags(make_cluster):
    cluster = make_cluster(SPARSE, num_servers=2)
    with ps_client.connect(cluster.client_config_path) as client:
        ids = torch.tensor([[4, 8, 4], [8, 8, 1]])
        rows = {i: torch.from_numpy(client.pull_sparse("emb", [i]).wait()[0])
                for i in (1, 4, 8)}
        lookup = ps_client.nn.Embedding(client, "emb")
        out = lookup(ids)
        assert out.shape == (2, 3, 3)
        torch.testing.assert_close(out[1, 0], rows[8], rtol=0, atol=0)
        out.sum().backward()
        lookup.flush()
        # Row 8 appears three times: gradient 3 per element, lr 1.
        torch.testing.assert_close(
            torch.from_numpy(client.pull_sparse("emb", [8]).wait()[0]),
            rows[8] - 3.0)
        bag = ps_client.nn.EmbeddingBag(client, "emb", mode="sum")
        with torch.no_grad():
            pooled = bag(ids)  # (B, N) input: B bags of N ids
        torch.testing.assert_close(pooled[0], 2 * (rows[4] - 2.0) + rows[8] - 3.0)


def test_prefetch_is_used_by_the_next_forward_and_is_one_step_stale(
        make_cluster):
    cluster = make_cluster(SPARSE, num_servers=2)
    with ps_client.connect(cluster.client_config_path) as raw:
        client = RecordingClient(raw)
        emb = ps_client.nn.EmbeddingBag(client, "emb", mode="sum")
        ids = torch.tensor([[2, 5]])
        first = emb(ids)
        emb.prefetch(ids)  # before this batch's gradients are pushed
        first.sum().backward()  # pushes -1 for rows 2 and 5
        pulls = len(client.pulled)
        second = emb(ids)  # the prefetched rows: without the last push
        assert len(client.pulled) == pulls
        torch.testing.assert_close(second, first.detach())
        second.sum().backward()
        emb.prefetch(torch.tensor([[9, 9]]))  # not the next batch: dropped
        third = emb(ids)  # pulled afresh: both pushes applied
        assert len(client.pulled) == pulls + 2
        torch.testing.assert_close(third, first.detach() - 4.0)


def test_embedding_rejects_a_dense_table(make_cluster):
    cluster = make_cluster("tables:\n  - {name: d, kind: dense, size: 4}\n",
                           num_servers=1)
    with ps_client.connect(cluster.client_config_path) as client:
        with pytest.raises(ValueError, match="table 'd' is dense; an "
                           "embedding needs a sparse table"):
            ps_client.nn.EmbeddingBag(client, "d")


def test_int32_ids_are_the_int64_ids_and_other_types_are_refused(make_cluster):
    # torch's embeddings take int64 and int32 indices; so do ours, with the
    # same rows (-1 is the uint64 id 2**64 - 1 either way).
    cluster = make_cluster(SPARSE, num_servers=2)
    with ps_client.connect(cluster.client_config_path) as client:
        ids = [[4, -1, 4], [7, 7, 1]]
        bag = ps_client.nn.EmbeddingBag(client, "emb", mode="sum")
        with torch.no_grad():
            wide = bag(torch.tensor(ids, dtype=torch.int64))
        narrow = bag(torch.tensor(ids, dtype=torch.int32))
        torch.testing.assert_close(narrow, wide, rtol=0, atol=0)
        before = torch.from_numpy(client.pull_sparse("emb", [2**64 - 1]).wait())
        narrow.sum().backward()  # pushes gradient 1 per use, lr 1
        bag.flush()
        after = torch.from_numpy(client.pull_sparse("emb", [2**64 - 1]).wait())
        torch.testing.assert_close(after, before - 1.0)
        for dtype in (torch.float32, torch.int16, torch.uint8):
            with pytest.raises(TypeError, match="ids must be an int64 or int32 "
                               f"tensor .*; got {dtype}"):
                bag(torch.tensor(ids).abs().to(dtype))
