#!/usr/bin/env python3
"""The CTR job's ceiling: the same model, data, loop and optimizers in one
process, without the cluster.

What train_ctr.py's figures are compared with: the embedding rows live in
a local ``torch.nn.Embedding`` (sparse gradients) and the MLP's parameters
in the module itself, updated by torch optimizers equal to the config's
table optimizers (sgd / adagrad for the sparse table, sgd / adagrad / adam
for the dense one, same hyper-parameters and initializers). It trains the
whole training split (W workers' shares) with the configured batch size on
one CPU thread, so its samples/s is what one process does with no
communication at all, and its AUC what one process reaches on the same
schedule::

    train_in_process.py --config deploy/examples/ctr.yaml

Prints the START / PROGRESS / EVAL / FINAL / DONE lines as worker 0.
"""

import argparse
import os
import sys

import numpy as np
import torch
import yaml

from ps_client.worker import ProgressLog

import ctr_data
import job
import plot
from model import WideAndDeep


def table_spec(config, name):
    """The table ``name`` of the config (a dict from its YAML)."""
    for table in config.get("tables") or []:
        if table.get("name") == name:
            return table
    sys.exit(f"train_in_process: the config has no table '{name}'")


def initialize(tensor, spec):
    """Fills ``tensor`` as the table's initializer fills its values."""
    init = spec.get("initializer") or {"type": "zeros"}
    kind = init.get("type")
    with torch.no_grad():
        if kind == "normal":
            tensor.normal_(init.get("mean", 0.0), init.get("stddev", 1.0))
        elif kind == "uniform":
            tensor.uniform_(init.get("low", 0.0), init.get("high", 1.0))
        elif kind in ("zeros", "constant"):
            tensor.fill_(init.get("value", 0.0))
        else:
            sys.exit(f"train_in_process: table '{spec['name']}': initializer "
                     f"'{kind}' is not mirrored here")


def optimizer(params, spec, sparse):
    """The torch optimizer equal to the table's server-side optimizer."""
    opt = dict(spec.get("optimizer") or {})
    kind, lr = opt.pop("type", "sgd"), opt.pop("learning_rate", 0.01)
    decay = opt.pop("weight_decay", 0.0)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=decay)
    if kind == "adagrad":
        return torch.optim.Adagrad(
            params, lr=lr, weight_decay=decay, eps=opt.get("epsilon", 1e-10),
            initial_accumulator_value=opt.get("initial_accumulator", 0.0))
    if kind == "adam" and not sparse:
        return torch.optim.Adam(
            params, lr=lr, weight_decay=decay, eps=opt.get("epsilon", 1e-8),
            betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)))
    sys.exit(f"train_in_process: table '{spec['name']}': optimizer '{kind}' "
             f"is not mirrored here for a {'sparse' if sparse else 'dense'} "
             "table")


class LocalEmbedding(torch.nn.Module):
    """Rows of a data set's ids in a local table: an id's row is its index
    in the sorted array of every id of the data set."""

    def __init__(self, all_ids, spec):
        super().__init__()
        self.ids = all_ids
        self.table = torch.nn.Embedding(len(all_ids), spec["dim"],
                                        sparse=True)
        initialize(self.table.weight, spec)

    def forward(self, ids):
        rows = np.searchsorted(self.ids, ids.numpy().view(np.uint64))
        return self.table(torch.from_numpy(rows))

    def prefetch(self, ids):
        """Nothing to start: lookups are local."""

    def flush(self):
        """Nothing in flight."""


class LocalUpdates:
    """pull() / push() of DenseParameters, done by local optimizers."""

    def __init__(self, optimizers):
        self.optimizers = optimizers

    def pull(self):
        """The parameters are local: nothing to read."""

    def push(self):
        for opt in self.optimizers:
            opt.step()
            opt.zero_grad(set_to_none=False)


def main(argv=None):
    parser = job.add_job_arguments(argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0]))
    parser.add_argument("--config", required=True, help="cluster config "
                        "(its tables and training: section)")
    args = parser.parse_args(argv)
    settings = job.training_settings(args, args.config)
    with open(args.config) as f:
        config = yaml.safe_load(f)
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(settings["seed"])
    data_dir = job.prepare_data(args, settings["data_dir"])
    meta = ctr_data.read_meta(data_dir)
    train = ctr_data.load_split(data_dir, "train")
    test = ctr_data.load_split(data_dir, "test")
    sparse = table_spec(config, args.sparse_table)
    dense = table_spec(config, args.dense_table)
    model = WideAndDeep(sparse["dim"] - 1, settings["hidden"])
    for p in model.parameters():
        initialize(p, dense)
    embedding = LocalEmbedding(
        np.unique(np.concatenate([np.unique(train.ids), np.unique(test.ids)])),
        sparse)
    updates = LocalUpdates([optimizer(embedding.parameters(), sparse, True),
                            optimizer(model.parameters(), dense, False)])
    workers = (config.get("cluster") or {}).get("num_workers", 1)
    train = train.rows(0, len(train) // workers * workers)  # W equal shares
    log, curve = ProgressLog(0), []
    batch = settings["batch_size"]
    log.start(model=model.describe(), framework="pytorch-in-process",
              steps_per_epoch=len(train) // batch, epochs=settings["epochs"],
              batch_size=batch, examples=len(train),
              data=os.path.basename(os.path.normpath(data_dir)))
    periodic = test.rows(0, args.eval_examples)
    loop = job.TrainingLoop(model, embedding, updates, settings, meta, log,
                            curve)
    steps, wall = loop.run(
        train, lambda: job.evaluate(model, embedding, periodic, meta),
        args.log_every_steps)
    value, logloss = job.evaluate(model, embedding, test, meta)
    curve.append({"time_s": wall, "step": steps, "auc": value})
    teacher = ({"teacher_auc": f"{meta['teacher_auc']:.4f}"}
               if "teacher_auc" in meta else {})
    log.line("FINAL", steps=steps, test_accuracy=value, auc=f"{value:.4f}",
             logloss=f"{logloss:.4f}", **teacher, time_s=wall)
    plot.report(args.out_dir, curve, meta, f"CTR job in one process, "
                f"held-out AUC {value:.4f}")
    log.done(steps=steps, samples=steps * batch, wall_s=wall,
             samples_per_s=steps * batch / max(wall, 1e-9))


if __name__ == "__main__":
    main()
