#!/usr/bin/env python3
"""The CTR job: a Wide & Deep model (model.py) trained through the cluster.

Each worker trains on its contiguous share of the training split: the 26
categorical ids of a batch go through ``ps_client.nn.Embedding`` over the
config's sparse table (one row of 1 + D floats per id; the servers' Adagrad
updates it), the MLP's parameters through ``ps_client.nn.DenseParameters``
over its dense table (the servers' Adam). It follows ps_launch's worker
contract (``ps_client.worker``; deploy/launcher/WORKER_CONTRACT.md)::

    ps_launch --config deploy/examples/ctr.yaml \\
        --worker_cmd '/usr/bin/python3 client/python/examples/ctr/train_ctr.py'

Data: ``--dataset DIR`` (a data set made by synthetic.py or criteo_tsv.py),
or by default the synthetic data set of ``--num_train`` / ``--num_test``
examples, generated on first use into the config's ``training.data_dir``
(one worker generates while the others wait) and reused afterwards.

Reports (worker 0, after every worker finished: a barrier): held-out AUC
(EVAL / FINAL ``test_accuracy`` is the AUC, so ps_launch's RESULT line and
plot carry it) next to the teacher's, log loss, the job's samples/s, rows
per shard of the sparse table and memory per shard (cluster_stats.py), and
a plot of loss and AUC over time under ``--out_dir``.

Settings from the config's ``training:`` section (batch_size, epochs,
eval_every_steps, seed, data_dir), overridden by flags. The loop, data
preparation and evaluation are job.py's, shared with train_in_process.py.
"""

import argparse
import os
import sys
import time

import torch

import ps_client
import ps_client.nn
from ps_client.worker import ProgressLog, add_worker_arguments, worker_context

import cluster_stats
import ctr_data
import job
import plot
from model import WideAndDeep


def mib_list(values):
    """Byte counts as "12.3,45.6" MiB, one per shard."""
    return ",".join(f"{v / 2 ** 20:.1f}" for v in values)


def heap_fields(before, after, rows, charged):
    """FINAL fields about the servers' malloc heaps (GetStats): in use and
    freed-but-kept per shard, the growth of the heap in use over training
    per row, and that growth over the growth of the table memory the
    formula charges (rows and pending counts): <= 1 when the rows take what
    the formula says."""
    if after is None:
        return {}
    fields = {"shard_heap_mib": mib_list(after["allocated"]),
              "shard_heap_free_mib": mib_list(after["free"])}
    if before is not None and sum(rows) > 0:
        growth = sum(after["allocated"]) - sum(before["allocated"])
        fields["heap_growth_bytes_per_row"] = f"{growth / sum(rows):.1f}"
        if charged > 0:
            fields["heap_growth_vs_formula"] = f"{growth / charged:.3f}"
    return fields


def memory_fields(before, after, rows, table):
    """FINAL fields about the servers' memory (cluster_stats.py): the table's
    memory per shard by the documented formula and that formula's bytes per
    row (GetStats), RSS and peak RSS per shard, and the RSS growth over
    training per row."""
    fields = {"shard_table_mib": mib_list(table["memory_bytes"]),
              "formula_bytes_per_row": table["bytes_per_row"][0]}
    if any(m is None for m in after):
        fields["memory_source"] = "unknown"
        return fields
    fields |= {"memory_source": "proc",
               "shard_rss_mib": mib_list(m["rss"] for m in after),
               "shard_peak_rss_mib": mib_list(m["hwm"] for m in after)}
    if all(m is not None for m in before) and sum(rows) > 0:
        growth = sum(a["rss"] - b["rss"] for a, b in zip(after, before))
        fields["rss_growth_bytes_per_row"] = f"{growth / sum(rows):.1f}"
    return fields


def cluster_fields(client, sparse_table, before):
    """FINAL fields about the servers: rows of the sparse table (live,
    admitted, evicted) in all and per shard, and memory per shard."""
    stats = client.stats()
    counters = cluster_stats.table_rows(stats, sparse_table)
    fields = {}
    for counter, values in counters.items():
        name = "rows" if counter == "num_rows" else counter
        fields[name] = sum(values)
        fields[f"shard_{name}"] = ",".join(map(str, values))
    rows = counters.get("num_rows", [])
    memory_after = cluster_stats.shard_memory([s.address for s in stats])
    table = cluster_stats.table_memory(stats, sparse_table)
    fields.update(memory_fields(before["proc"], memory_after, rows, table))
    charged = (sum(table["memory_bytes"]) -
               sum(before["table"]["memory_bytes"]))
    fields.update(heap_fields(before["heap"],
                              cluster_stats.heap_memory(stats), rows, charged))
    return fields


def teacher_fields(meta, value):
    """FINAL fields comparing the AUC with the teacher's (synthetic data)."""
    if "teacher_auc" not in meta:
        return {}
    return {"teacher_auc": f"{meta['teacher_auc']:.4f}",
            "auc_gap": f"{meta['teacher_auc'] - value:.4f}",
            "teacher_logloss": f"{meta['teacher_logloss']:.4f}"}


def connect_model(args, settings, worker, config):
    """Connects and returns (client, sparse table, model): the model sized
    from the sparse table's dim, checked against the dense table's size."""
    client = ps_client.connect(config, worker_index=worker.worker_index)
    sparse = client.table(args.sparse_table)
    model = WideAndDeep(sparse.dim - 1, settings["hidden"])
    dense = client.table(args.dense_table)
    if dense.size != model.num_dense_parameters():
        client.close()
        sys.exit(f"train_ctr: dense table '{dense.name}' has {dense.size} "
                 f"elements; the model (embedding dim {sparse.dim - 1}, "
                 f"hidden {args.hidden}) needs exactly "
                 f"{model.num_dense_parameters()}: set its size to that")
    return client, sparse, model


def main(argv=None):
    args = job.add_job_arguments(add_worker_arguments(argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0]))).parse_args(argv)
    worker = worker_context(args)
    settings = job.training_settings(args, worker.config_path)
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(settings["seed"])
    config = ps_client.load_cluster_config(worker.config_path)
    data_dir = job.prepare_data(args, settings["data_dir"])
    meta = ctr_data.read_meta(data_dir)
    train = ctr_data.load_split(data_dir, "train")
    per_worker = len(train) // config.num_workers
    train = train.rows(worker.worker_index * per_worker,
                       (worker.worker_index + 1) * per_worker)
    batch = settings["batch_size"]
    if len(train) < batch:
        sys.exit(f"train_ctr: worker {worker.worker_index} has {len(train)} "
                 f"examples, fewer than one batch of {batch}")

    client, sparse, model = connect_model(args, settings, worker, config)
    lead = worker.worker_index == 0  # evaluates and reports
    before = None  # the servers' memory before training (worker 0)
    if lead:
        stats = client.stats()
        before = {"proc": cluster_stats.shard_memory(
                      [s.address for s in stats]),
                  "heap": cluster_stats.heap_memory(stats),
                  "table": cluster_stats.table_memory(stats, sparse.name)}
    # Nobody trains before worker 0 took that snapshot: the growth it
    # reports covers every row (a worker that started first made it depend
    # on timing).
    client.barrier()
    log, curve = ProgressLog(worker.worker_index), []
    params = ps_client.nn.DenseParameters(client, model, args.dense_table)
    loop = job.TrainingLoop(model, ps_client.nn.Embedding(client, sparse),
                            params, settings, meta, log, curve)
    evaluate_fn = None
    if lead:
        test = ctr_data.load_split(data_dir, "test")
        lookup = ps_client.nn.Embedding(client, sparse)
        periodic = test.rows(0, args.eval_examples)
        evaluate_fn = lambda: job.evaluate(model, lookup, periodic, meta)
    log.start(model=model.describe(), framework="pytorch",
              consistency=sparse.consistency,
              steps_per_epoch=len(train) // batch, epochs=settings["epochs"],
              batch_size=batch, examples=len(train),
              data=os.path.basename(os.path.normpath(data_dir)))
    start = time.monotonic()
    steps, wall = loop.run(train, evaluate_fn, args.log_every_steps)
    client.barrier()  # every worker's updates are in
    job_wall = time.monotonic() - start
    if lead:
        # The final model, with every worker's last update (params.pull()
        # would reuse this worker's last push-pull on an async table).
        client.pull_dense(params.table, offset=params.offset,
                          out=params.values).wait()
        value, logloss = job.evaluate(model, lookup, test, meta)
        curve.append({"time_s": job_wall, "step": steps, "auc": value})
        samples = steps * batch * config.num_workers  # equal shares
        log.line("FINAL", steps=steps, test_accuracy=value,
                 auc=f"{value:.4f}", logloss=f"{logloss:.4f}",
                 **teacher_fields(meta, value),
                 job_samples_per_s=f"{samples / job_wall:.1f}",
                 time_s=job_wall,
                 **cluster_fields(client, sparse.name, before))
        plot.report(args.out_dir, curve, meta,
                    f"CTR job: {config.num_workers} workers, "
                    f"{len(config.servers)} servers, held-out AUC "
                    f"{value:.4f}")
    log.done(steps=steps, samples=steps * batch, wall_s=wall,
             samples_per_s=steps * batch / max(wall, 1e-9))
    client.close()


if __name__ == "__main__":
    main()
