#!/usr/bin/env python3
"""PyTorch's step time for the worker's MLP, the reference for model_bench.

The same model as the main job's (784-256-128-10, ReLU, mean softmax
cross-entropy, float32 without TF32, as worker/cuda_model.cc's pedantic
cuBLAS math), the same batches and the same timing (median of blocks of
steps, after a warm-up block). Two PyTorch steps are timed:

  device  parameters live on the GPU, the batch too: zero the gradients,
          forward, loss, backward; one synchronisation per block. PyTorch's
          best case, and the issue's reference.
  host    the contract of our Model::LossAndGradient, which ps_worker calls
          each step: parameters copied in from host memory, forward,
          backward, gradients and loss copied out to host memory, synchronised
          every step.

With --ours (model_bench's JSON line, or a file holding it) it also prints
our CUDA step against each, with the target: ours <= 1.5 x PyTorch's device
step.

  python3 tests/bench/torch_mlp_step.py [--batches 64,256,1024]
      [--hidden 256,128] [--steps 200] [--blocks 7] [--ours model_bench.out]
"""
import argparse
import json
import statistics
import sys
import time

import torch

TARGET = 1.5  # our step <= TARGET x PyTorch's device step


def build(hidden, device):
    dims = [784] + hidden + [10]
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(device)


def time_blocks(step, steps, blocks, sync):
    times = []
    for b in range(blocks + 1):  # b == 0 is the warm-up
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        if b > 0:
            times.append(time.perf_counter() - start)
    return statistics.median(times) / steps


def measure(hidden, batch, steps, blocks):
    dev = torch.device("cuda")
    model = build(hidden, dev)
    params = list(model.parameters())
    x = torch.rand(batch, 784, device=dev)
    y = torch.arange(batch, device=dev) % 10
    loss_fn = torch.nn.CrossEntropyLoss()

    def device_step():
        for p in params:
            p.grad = None
        loss_fn(model(x), y).backward()

    # Host-side parameter and gradient vectors, pageable as ps_worker's.
    flat = torch.nn.utils.parameters_to_vector(params).detach().cpu()
    host_grads = torch.empty_like(flat)
    x_host, y_host = x.cpu(), y.cpu()

    def host_step():
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat.to(dev), params)
        for p in params:
            p.grad = None
        loss = loss_fn(model(x_host.to(dev)), y_host.to(dev))
        loss.backward()
        host_grads.copy_(torch.cat([p.grad.reshape(-1) for p in params]))
        return loss.item()

    sync = torch.cuda.synchronize
    return {
        "batch": batch,
        "device_step_seconds": time_blocks(device_step, steps, blocks, sync),
        "host_step_seconds": time_blocks(host_step, steps, blocks, sync),
    }


def load_ours(path):
    """Our CUDA rows from model_bench's output: {batch: step_seconds}."""
    with open(path) as f:
        for line in f:
            if line.startswith('{"benchmark":"model_step"'):
                doc = json.loads(line)
                return {r["batch"]: r["step_seconds"] for r in doc["results"]
                        if r["device"].startswith("cuda")}
    raise SystemExit(f"{path}: no model_step JSON line (model_bench's output)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--hidden", default="256,128")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--ours", help="model_bench output to compare with")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_mlp_step: no CUDA device visible to PyTorch", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    hidden = [int(h) for h in args.hidden.split(",")]
    ours = load_ours(args.ours) if args.ours else {}
    rows = [measure(hidden, int(b), args.steps, args.blocks)
            for b in args.batches.split(",")]

    name = torch.cuda.get_device_name(0)
    print(f"PyTorch {torch.__version__} on {name}, mlp(784-"
          f"{'-'.join(map(str, hidden))}-10), {args.steps} steps per block, "
          f"median of {args.blocks} blocks")
    print(f"{'batch':>6} {'torch_device_us':>16} {'torch_host_us':>14} "
          f"{'ours_us':>9} {'ours/device':>12} {'ours/host':>10} target")
    met = True
    for r in rows:
        mine = ours.get(r["batch"])
        line = (f"{r['batch']:>6} {r['device_step_seconds'] * 1e6:>16.1f} "
                f"{r['host_step_seconds'] * 1e6:>14.1f}")
        if mine is None:
            print(line)
            continue
        r["ours_step_seconds"] = mine
        r["ours_over_device"] = mine / r["device_step_seconds"]
        r["ours_over_host"] = mine / r["host_step_seconds"]
        r["target_met"] = r["ours_over_device"] <= TARGET
        met = met and r["target_met"]
        print(f"{line} {mine * 1e6:>9.1f} {r['ours_over_device']:>12.2f} "
              f"{r['ours_over_host']:>10.2f} <={TARGET}x device "
              f"{'met' if r['target_met'] else 'NOT met'}")
    print(json.dumps({"benchmark": "torch_mlp_step", "torch": torch.__version__,
                      "gpu": name, "hidden": hidden, "steps": args.steps,
                      "blocks": args.blocks, "target_ratio": TARGET,
                      "results": rows}, separators=(",", ":")))
    return 0 if met else 3


if __name__ == "__main__":
    sys.exit(main())
