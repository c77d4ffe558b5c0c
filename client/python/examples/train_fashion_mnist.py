#!/usr/bin/env python3
"""Fashion-MNIST MLP in PyTorch, trained through the parameter-server cluster.

A complete trainer to copy: a stock ``torch.nn.Module`` whose parameters live
in the cluster's dense table (``ps_client.nn.DenseParameters``), updated by
the servers' optimizer. It follows the worker-command contract of
``ps_launch`` (``ps_client.worker``): it takes ``--config=PATH --index=I``
(or ``$PS_CONFIG`` / ``$PS_WORKER_INDEX``) and prints the START / PROGRESS /
EVAL / FINAL / DONE lines the launcher parses. With the main job's config::

    ps_launch --config deploy/examples/fashion_mnist.yaml \\
        --worker_cmd '/usr/bin/python3 client/python/examples/train_fashion_mnist.py'

Settings come from the config's ``training:`` section (batch_size, epochs,
lr_decay, eval_every_steps, seed, data_dir) and may be overridden by flags.
The model table is the config's first dense table (``--table`` to choose);
its size must be 784*256 + 256 + 256*128 + 128 + 128*10 + 10 = 235146
(torch's Linear layers, in order: weight, bias).
"""

import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

import ps_client
import ps_client.nn
from ps_client.worker import ProgressLog, add_worker_arguments, worker_context


def read_idx(path):
    """An IDX file (.gz) as a numpy array (uint8)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
                  for i in range(ndim))
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32))
    return x / 255.0, torch.from_numpy(labels.astype(np.int64))


def parse_args():
    parser = add_worker_arguments(argparse.ArgumentParser(description=__doc__))
    parser.add_argument("--table", help="model table (default: the config's "
                        "first dense table)")
    parser.add_argument("--batch_size", type=int)
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--lr_decay", type=float)
    parser.add_argument("--eval_every_steps", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--data_dir")
    parser.add_argument("--log_every_steps", type=int, default=50)
    parser.add_argument("--max_train_examples", type=int, default=0,
                        help="use only the first N training examples (0: all)")
    parser.add_argument("--torch_threads", type=int, default=1,
                        help="torch intra-op threads (servers and other "
                        "workers share the CPU)")
    return parser.parse_args()


def training_settings(args, config_path):
    """The config's training: section, overridden by flags."""
    with open(config_path) as f:
        section = (yaml.safe_load(f) or {}).get("training") or {}
    settings = {"batch_size": 64, "epochs": 1, "lr_decay": 1.0,
                "eval_every_steps": 200, "seed": 1,
                "data_dir": "/usr/share/datasets/fashion-mnist"}
    for key in settings:
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
        elif key in section:
            settings[key] = type(settings[key])(section[key])
    return settings


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def shard(x, y, worker, num_workers):
    """Equal contiguous shards, so every worker runs the same number of
    steps (sync and ssp tables need that)."""
    per_worker = len(x) // num_workers
    lo = worker * per_worker
    return x[lo:lo + per_worker], y[lo:lo + per_worker]


def train(model, params, data, test, settings, log_every, log, seed):
    """The training loop, driven by the job's step (``params.step``): a
    started, restarted or rejoined worker continues at the job's step, and
    its batches follow the step (epoch e's order depends only on seed and
    e). Returns the steps this process ran and its wall time."""
    (x, y), batch = data, settings["batch_size"]
    steps_per_epoch = len(x) // batch
    total_steps = settings["epochs"] * steps_per_epoch
    start = time.monotonic()
    step = params.step
    ran, losses, last = 0, [], (0.0, step)  # (time_s, step) of the last log
    order_epoch, order = -1, None
    while step < total_steps:
        epoch, i = divmod(step, steps_per_epoch)
        if epoch != order_epoch:
            generator = torch.Generator().manual_seed(seed * 1000003 + epoch)
            order, order_epoch = torch.randperm(len(x), generator=generator), epoch
        index = order[i * batch:(i + 1) * batch]
        params.pull()
        loss = F.cross_entropy(model(x[index]), y[index])
        loss.backward()
        scale = settings["lr_decay"] ** epoch  # exact for SGD
        # The next step: step + 1, or the job's step after a rejoin.
        next_step = params.push(scale=scale)
        step, ran = max(next_step, step + 1), ran + 1
        losses.append(loss.item())
        now = time.monotonic() - start
        if step % log_every == 0:
            log.progress(epoch=epoch + 1, step=step,
                         loss=sum(losses) / len(losses),
                         samples_per_s=(step - last[1]) * batch /
                         max(now - last[0], 1e-9), time_s=now)
            losses, last = [], (now, step)
        if (settings["eval_every_steps"] and
                step % settings["eval_every_steps"] == 0):
            log.eval(epoch=epoch + 1, step=step,
                     test_accuracy=accuracy(model, *test), time_s=now)
    return ran, time.monotonic() - start


def main():
    args = parse_args()
    worker = worker_context(args)
    settings = training_settings(args, worker.config_path)
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(settings["seed"])

    config = ps_client.load_cluster_config(worker.config_path)
    client = ps_client.connect(config, worker_index=worker.worker_index)
    table = args.table or next(t.name for t in config.tables
                               if t.kind == "dense")
    model = mlp()
    params = ps_client.nn.DenseParameters(client, model, table)

    train_x, train_y = load_split(settings["data_dir"], "train")
    test = load_split(settings["data_dir"], "t10k")
    if args.max_train_examples:
        train_x = train_x[:args.max_train_examples]
        train_y = train_y[:args.max_train_examples]
    data = shard(train_x, train_y, worker.worker_index, config.num_workers)

    log = ProgressLog(worker.worker_index)
    batch = settings["batch_size"]
    log.start(model="mlp(784-256-128-10)", framework="pytorch",
              consistency=params.table.consistency,
              steps_per_epoch=len(data[0]) // batch,
              epochs=settings["epochs"], batch_size=batch,
              examples=len(data[0]))
    steps, wall = train(model, params, data, test, settings,
                        args.log_every_steps, log,
                        seed=settings["seed"] * 1000 + worker.worker_index)
    params.pull()  # the final model, after the last step
    log.final(steps=steps, test_accuracy=accuracy(model, *test), time_s=wall)
    log.done(steps=steps, samples=steps * batch, wall_s=wall,
             samples_per_s=steps * batch / max(wall, 1e-9))
    client.close()


if __name__ == "__main__":
    main()
