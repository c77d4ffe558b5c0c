#!/usr/bin/env python3
"""Alternating A/B runs of transport_bench; prints the median of every cell.

On this shared machine one run differs from the next by up to 1.5x, so a
change is judged by interleaving runs of A and B and comparing medians.

usage: tests/bench/ab_transport.py N SPEC_A SPEC_B -- BENCH_ARGS...

SPEC is '-' (defaults) or space-separated items: '--flag=value' (added to
A's or B's bench command line), 'BIN=path' (another transport_bench binary;
give --server_bin too when it is outside bazel-bin) or 'VAR=value' (an
environment variable). Example, a ps_server built from another commit:

  tests/bench/ab_transport.py 5 - "--server_bin=/tmp/ps_server_old" -- \\
      --configs=1x1 --ops=push,pull --sizes=4096,1048576
"""
import os
import re
import statistics
import subprocess
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     '../../bazel-bin/tests/bench/transport_bench')
COLUMNS = 'GB/s p50 ratio cli-cpu srv-cpu grpc-GB/s vs-TCPn'
# Table columns of those figures (vs-TCPn: transport_bench since issue 21;
# older binaries print no such column and get '-' there).
INDICES = (3, 5, 8, 10, 11, 12, 17)


def command(spec):
    env, extra, binary = dict(os.environ), [], BENCH
    if spec != '-':
        for item in spec.split():
            if item.startswith('--'):
                extra.append(item)
            elif item.startswith('BIN='):
                binary = item[4:]
            else:
                key, value = item.split('=', 1)
                env[key] = value
    return [binary] + extra, env


def main():
    if len(sys.argv) < 5 or sys.argv[4] != '--':
        sys.exit(__doc__)
    rounds, specs, args = int(sys.argv[1]), sys.argv[2:4], sys.argv[5:]
    cells = [{}, {}]
    for _ in range(rounds):
        for k, spec in enumerate(specs):
            cmd, env = command(spec)
            out = subprocess.run(cmd + args, env=env, capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) >= 13 and re.match(r'\d+x\d+', f[0]):
                    cells[k].setdefault(tuple(f[:3]), []).append(
                        [float(f[i]) if i < len(f) else None for i in INDICES])
    print(f"{'cell':34s} | A: {COLUMNS:43s} | B: {COLUMNS}")
    for key in cells[0]:
        def med(k):
            runs = cells[k].get(key, [])
            if not runs:
                return '-'
            return ' '.join(
                f'{statistics.median(r[j] for r in runs):.3g}'
                if all(r[j] is not None for r in runs) else '-'
                for j in range(len(INDICES)))
        print(f"{' '.join(key):34s} | {med(0):46s} | {med(1)}")


if __name__ == '__main__':
    main()
