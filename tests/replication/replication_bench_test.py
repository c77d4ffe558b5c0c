"""Smoke test of the replication benchmark's machinery (not of its figures).

A tiny run of replication_bench (one alternated round, two SIGKILLs of the
primary) against real ps_server processes and a real etcd: it must finish,
print every row, and its JSON must agree with itself: ratios are the
quotient of their two sides, p50 <= p99 on each side, the TCP ceiling
(direct and relayed, its ratio and factor 2's distance to it) measured for
every case, the failover part counted every kill, and each failover stayed
within the benchmark's own 10 s bound (a failover it could not see end is
an error, exit code 1). The ceiling's peer and relay processes must be gone
when it returns, and their directory removed.

Environment (pytest_test.sh makes the path absolute): REPLICATION_BENCH.
"""
import glob
import json
import os
import subprocess

BENCH = os.environ.get('REPLICATION_BENCH', 'bazel-bin/tests/replication/replication_bench')
TEMP_DIR = os.environ.get('TEST_TMPDIR', '/tmp')


def close_to(value, expected):
    """Equal up to the JSON's rounding of ratios (3 decimals)."""
    return abs(value - expected) <= 1e-3 * expected + 1e-3


def children_of(pid):
    """Command lines of the ceiling processes the bench with `pid` started."""
    found = []
    for path in glob.glob('/proc/[0-9]*/cmdline'):
        try:
            with open(path, 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue  # it exited meanwhile
        if f'--parent_pid={pid}'.encode() in args:
            found.append(b' '.join(args).decode(errors='replace'))
    return found


def run_bench(*flags):
    before = set(glob.glob(os.path.join(TEMP_DIR, 'relay_ceiling_*')))
    bench = subprocess.Popen([BENCH, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    stdout, stderr = bench.communicate(timeout=240)
    assert bench.returncode == 0, stderr
    assert children_of(bench.pid) == []
    assert set(glob.glob(os.path.join(TEMP_DIR, 'relay_ceiling_*'))) == before
    return stdout


def test_tiny_run_prints_consistent_rows_and_counts_every_kill():
    stdout = run_bench('--rounds=1', '--small_ops=200', '--big_ops=2', '--kills=2')
    lines = stdout.strip().splitlines()
    doc = json.loads(lines[-1])
    assert doc['benchmark'] == 'replication' and doc['rounds'] == 1
    for key in ('push_4k_p50_us', 'push_4k_p99_us', 'push_16m_gbps'):
        row = doc[key]
        for side in ('factor_1', 'factor_2', 'tcp_direct', 'tcp_relayed'):
            assert row[side] > 0, (key, side, row)
        assert close_to(row['ratio'], row['factor_2'] / row['factor_1']), (key, row)
        ceiling = row['tcp_relayed'] / row['tcp_direct']
        assert close_to(row['ceiling_ratio'], ceiling), (key, row)
        assert close_to(row['vs_ceiling'], row['factor_2'] / row['factor_1'] / ceiling), (key, row)
    for side in ('factor_1', 'factor_2', 'tcp_direct', 'tcp_relayed'):
        assert doc['push_4k_p50_us'][side] <= doc['push_4k_p99_us'][side]
    failover = doc['failover']
    assert failover['kills'] == 2
    assert 0 < failover['median_ms'] <= failover['max_ms'] < 10_000
    assert 0 < failover['rejoin_median_ms'] <= failover['rejoin_max_ms']
    table = '\n'.join(lines[:-1])
    for row in ('push 4 KiB p50', 'push 4 KiB p99', 'push 16 MiB', 'over 2 kills',
                'TCP direct', 'TCP relayed'):
        assert row in table, table


def test_kills_zero_skips_the_failover_part():
    stdout = run_bench('--rounds=1', '--small_ops=50', '--big_ops=1', '--kills=0')
    doc = json.loads(stdout.strip().splitlines()[-1])
    assert doc['failover'] is None
    assert 'failover' not in stdout.replace('"failover"', '')
