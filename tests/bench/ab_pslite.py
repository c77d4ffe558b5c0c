#!/usr/bin/env python3
"""Our transport against ps-lite, side by side: alternating runs, medians.

Runs transport_bench and a ps-lite harness (built by you, outside this
repository: TRANSPORT_RESULTS.md, "ps-lite side by side", has the commands)
alternately, ROUNDS times each, the order flipped every round (ours first,
then ps-lite first, ...) so that a drift of the shared machine's load hits
both alike. Both get the same measurement flags and print one JSON document
with rows {config "SxW/...", op, size, gbps, p50_us, ...}. Per cell
(SxW, op, size) it prints the median of each side's throughput and p50, the
ratio of the medians, the median of the per-round ratios (each round's pair
ran back to back), and whether ours reaches --target x ps-lite.

usage: tests/bench/ab_pslite.py --pslite PATH [--bench PATH] [--rounds N]
           [--target X] [--ours_args '...'] [--pslite_args '...']
           [--json_out FILE] -- MEASUREMENT_FLAGS...

MEASUREMENT_FLAGS go to both (--configs, --sizes, --ops, --reps_scale,
--quick); --ops defaults to push,pull,push_pull (ps-lite has no sparse
operations here). --ours_args / --pslite_args go to one side only, e.g.
--pslite_args=--key_bytes=0 (the whole tensor as one key). Exit status: 0
when every cell met the target, 1 when some did not, 2 when a run failed.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     '../../bazel-bin/tests/bench/transport_bench')
OPS = '--ops=push,pull,push_pull'


def run_side(binary, args, json_path):
    """Runs one side once; its JSON rows by (SxW, op, size), or None."""
    cmd = [binary] + args + ['--json_out=' + json_path]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not os.path.exists(json_path):
        sys.stderr.write(f"failed ({done.returncode}): {shlex.join(cmd)}\n"
                         f"{done.stderr[-2000:]}\n")
        return None
    with open(json_path) as f:
        doc = json.load(f)
    os.unlink(json_path)
    return {(r['config'].split('/')[0], r['op'], r['size']): r
            for r in doc['results']}


def med(values):
    return statistics.median(values) if values else float('nan')


def summarize(rounds, target):
    """One summary dict per cell present in every round of both sides."""
    cells = []
    keys = [k for k in rounds[0]['ours'] if k in rounds[0]['pslite']]
    for key in keys:
        pairs = [(r['ours'].get(key), r['pslite'].get(key)) for r in rounds]
        pairs = [(a, b) for a, b in pairs if a and b]
        ours = [a['gbps'] for a, _ in pairs]
        theirs = [b['gbps'] for _, b in pairs]
        cell = {
            'config': key[0], 'op': key[1], 'size': key[2], 'rounds': len(pairs),
            'ours_gbps': med(ours), 'pslite_gbps': med(theirs),
            'ours_p50_us': med([a['p50_us'] for a, _ in pairs]),
            'pslite_p50_us': med([b['p50_us'] for _, b in pairs]),
            'paired_ratio': med([a / b for a, b in zip(ours, theirs) if b > 0]),
            # Our rows carry the best TCP ceiling of their run (TCPn).
            'tcp_best_gbps': med([a.get('tcp_best_gbps', 0) for a, _ in pairs]),
        }
        cell['ratio'] = (cell['ours_gbps'] / cell['pslite_gbps']
                         if cell['pslite_gbps'] > 0 else float('nan'))
        cell['met'] = cell['ratio'] >= target
        cells.append(cell)
    return cells


def print_table(cells, target, rounds):
    print(f"Medians of {rounds} alternating rounds; ratio = our GB/s / ps-lite's "
          f"(of the medians; 'paired': median of each round's ratio); target "
          f">= {target}x; TCPn = the best TCP ceiling of our runs.")
    print(f"{'cell':28s} {'ours GB/s':>10s} {'ps-lite':>10s} {'ratio':>7s} "
          f"{'paired':>7s} {'ours p50':>10s} {'ps-lite p50':>11s} "
          f"{'TCPn GB/s':>10s} {'met':>4s}")
    for c in cells:
        name = f"{c['config']} {c['op']} {c['size']}"
        print(f"{name:28s} {c['ours_gbps']:10.3f} {c['pslite_gbps']:10.3f} "
              f"{c['ratio']:7.2f} {c['paired_ratio']:7.2f} {c['ours_p50_us']:10.1f} "
              f"{c['pslite_p50_us']:11.1f} {c['tcp_best_gbps']:10.3f} "
              f"{'yes' if c['met'] else 'NO':>4s}")


def main():
    argv = sys.argv[1:]
    if '--' not in argv:
        sys.exit(__doc__)
    split = argv.index('--')
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument('--pslite', required=True)
    parser.add_argument('--bench', default=BENCH)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--target', type=float, default=1.2)
    parser.add_argument('--ours_args', default='')
    parser.add_argument('--pslite_args', default='')
    parser.add_argument('--json_out', default='')
    opts = parser.parse_args(argv[:split])
    common = argv[split + 1:]
    if not any(a.startswith('--ops') for a in common):
        common.append(OPS)
    sides = {'ours': (opts.bench, common + shlex.split(opts.ours_args)),
             'pslite': (opts.pslite, common + shlex.split(opts.pslite_args))}
    rounds = []
    with tempfile.TemporaryDirectory(prefix='ab_pslite_') as tmp:
        for i in range(opts.rounds):
            order = ['ours', 'pslite'] if i % 2 == 0 else ['pslite', 'ours']
            result = {}
            for side in order:
                binary, args = sides[side]
                result[side] = run_side(binary, args, os.path.join(tmp, side + '.json'))
                if result[side] is None:
                    return 2
                sys.stderr.write(f"round {i + 1}/{opts.rounds}: {side} done\n")
            rounds.append(result)
    cells = summarize(rounds, opts.target)
    print_table(cells, opts.target, opts.rounds)
    if opts.json_out:
        with open(opts.json_out, 'w') as f:
            json.dump({'rounds': opts.rounds, 'target': opts.target, 'cells': cells}, f)
    return 0 if cells and all(c['met'] for c in cells) else 1


if __name__ == '__main__':
    sys.exit(main())
