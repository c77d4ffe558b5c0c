"""Smoke test of the replication benchmark's machinery (not of its figures).

A tiny run of replication_bench (one alternated round, two SIGKILLs of the
primary) against real ps_server processes and a real etcd: it must finish,
print every row, and its JSON must agree with itself: ratios are the
quotient of their two sides, p50 <= p99 on each side, the failover part
counted every kill, and each failover stayed within the benchmark's own
10 s bound (a failover it could not see end is an error, exit code 1).

Environment (pytest_test.sh makes the path absolute): REPLICATION_BENCH.
"""
import json
import os
import subprocess

BENCH = os.environ.get('REPLICATION_BENCH', 'bazel-bin/tests/replication/replication_bench')


def test_tiny_run_prints_consistent_rows_and_counts_every_kill():
    done = subprocess.run([BENCH, '--rounds=1', '--small_ops=200', '--big_ops=2', '--kills=2'],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    doc = json.loads(lines[-1])
    assert doc['benchmark'] == 'replication' and doc['rounds'] == 1
    for key in ('push_4k_p50_us', 'push_4k_p99_us', 'push_16m_gbps'):
        row = doc[key]
        assert row['factor_1'] > 0 and row['factor_2'] > 0, (key, row)
        ratio = row['factor_2'] / row['factor_1']
        assert abs(row['ratio'] - ratio) <= 1e-3 * ratio + 1e-3, (key, row)
    for side in ('factor_1', 'factor_2'):
        assert doc['push_4k_p50_us'][side] <= doc['push_4k_p99_us'][side]
    failover = doc['failover']
    assert failover['kills'] == 2
    assert 0 < failover['median_ms'] <= failover['max_ms'] < 10_000
    assert 0 < failover['rejoin_median_ms'] <= failover['rejoin_max_ms']
    table = '\n'.join(lines[:-1])
    for row in ('push 4 KiB p50', 'push 4 KiB p99', 'push 16 MiB', 'over 2 kills'):
        assert row in table, table


def test_kills_zero_skips_the_failover_part():
    done = subprocess.run([BENCH, '--rounds=1', '--small_ops=50', '--big_ops=1', '--kills=0'],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc['failover'] is None
    assert 'failover' not in done.stdout.replace('"failover"', '')
