#!/usr/bin/env python3
"""The main job against the in-process trainer, alternated (issue 21, item 4).

Runs `worker:local_train` (the ceiling: same model code, optimizer and data,
batch 2 x 64 in one process) and the main job (ps_launch with the same config:
2 servers, 2 sync workers of batch 64) one after the other, the order flipped
every round, and prints per side the medians of:
  - wall_s: worker 0's training clock from its first step to DONE (the same
    number of evaluations on both sides are inside it);
  - train_s: samples / samples_per_s, evaluation pauses excluded (for the job
    the slowest worker's, which includes waiting for worker 0's evaluations);
  - the final test accuracy;
and the ratios job / in-process of the medians and the median of the
per-round ratios, with the load average before each run (the machine is
shared: a ratio taken under the same load is still a comparison, absolute
seconds are not).

usage: tests/bench/ab_train.py [--rounds 3] [--epochs 0] [--bin DIR]
           [--config FILE] [--json_out FILE] [--launch_args '...']

--epochs 0 keeps the config's (20 for deploy/examples/fashion_mnist.yaml).
Needs //worker:local_train //worker:ps_worker //server:ps_server
//deploy/launcher:ps_launch built (bazel-bin by default).
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, '../..'))

DONE = re.compile(r'DONE worker=(\S+) steps=(\d+) samples=(\d+) '
                  r'wall_s=([\d.]+) samples_per_s=([\d.]+)')
FINAL = re.compile(r'FINAL worker=0 steps=\d+ test_accuracy=([\d.]+)')


def load_average():
    with open('/proc/loadavg') as f:
        return float(f.read().split()[0])


def parse(output, what):
    """(wall_s of worker 0, train_s of the slowest worker, accuracy)."""
    done = {m.group(1): m for m in DONE.finditer(output)}
    final = FINAL.search(output)
    chief = done.get('0') or done.get('local')
    if chief is None or final is None or not done:
        raise RuntimeError(f'{what}: no DONE / FINAL line in its output:\n'
                           + output[-3000:])
    train = max(int(m.group(3)) / float(m.group(5)) for m in done.values())
    return float(chief.group(4)), train, float(final.group(1))


def run(cmd, what):
    load = load_average()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f'{what} failed ({proc.returncode}): '
                           f'{shlex.join(cmd)}\n' + proc.stdout[-3000:])
    wall, train, acc = parse(proc.stdout, what)
    return {'wall_s': wall, 'train_s': train, 'accuracy': acc,
            'load_before': load}


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--epochs', type=int, default=0)
    p.add_argument('--bin', default=os.path.join(REPO, 'bazel-bin'))
    p.add_argument('--config',
                   default=os.path.join(REPO, 'deploy/examples/fashion_mnist.yaml'))
    p.add_argument('--launch_args', default='',
                   help='extra ps_launch flags (shell words)')
    p.add_argument('--json_out', default='')
    args = p.parse_args()

    with tempfile.TemporaryDirectory(prefix='ab_train_') as work:
        config = os.path.join(work, 'config.yaml')
        with open(args.config) as f:
            text = f.read()
        if args.epochs > 0:
            text = re.sub(r'(?m)^(  epochs:).*$', rf'\g<1> {args.epochs}', text)
        with open(config, 'w') as f:
            f.write(text)
        local = [os.path.join(args.bin, 'worker/local_train'),
                 f'--config={config}']
        job = [os.path.join(args.bin, 'deploy/launcher/ps_launch'),
               f'--config={config}',
               f'--server_bin={os.path.join(args.bin, "server/ps_server")}',
               f'--worker_bin={os.path.join(args.bin, "worker/ps_worker")}',
               '--progress=plain', f'--out_dir={work}/out'
               ] + shlex.split(args.launch_args)
        rows = {'in_process': [], 'job': []}
        for r in range(args.rounds):
            order = [('in_process', local), ('job', job)]
            if r % 2:
                order.reverse()
            for name, cmd in order:
                result = run(cmd, name)
                rows[name].append(result)
                print(f'round {r + 1} {name:10s} wall {result["wall_s"]:7.2f} s '
                      f'train {result["train_s"]:7.2f} s accuracy '
                      f'{result["accuracy"]:.4f} load {result["load_before"]:.1f}',
                      file=sys.stderr, flush=True)

    def med(name, key):
        return statistics.median(x[key] for x in rows[name])

    summary = {}
    print(f'{"":12s} {"wall_s":>8s} {"train_s":>8s} {"accuracy":>9s} {"load":>5s}')
    for name in rows:
        summary[name] = {k: med(name, k) for k in
                         ('wall_s', 'train_s', 'accuracy', 'load_before')}
        s = summary[name]
        print(f'{name:12s} {s["wall_s"]:8.2f} {s["train_s"]:8.2f} '
              f'{s["accuracy"]:9.4f} {s["load_before"]:5.1f}')
    ratios = {}
    for key in ('wall_s', 'train_s'):
        ratios[key] = {
            'of_medians': summary['job'][key] / summary['in_process'][key],
            'median_per_round': statistics.median(
                j[key] / i[key] for j, i in zip(rows['job'], rows['in_process'])),
        }
        print(f'job / in-process {key}: {ratios[key]["of_medians"]:.3f} '
              f'(median of per-round ratios '
              f'{ratios[key]["median_per_round"]:.3f})')
    doc = {'rounds': args.rounds, 'epochs': args.epochs or None,
           'runs': rows, 'medians': summary, 'ratios': ratios,
           'time': time.strftime('%Y-%m-%dT%H:%M:%S')}
    print('JSON ' + json.dumps(doc, sort_keys=True))
    if args.json_out:
        with open(args.json_out, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
