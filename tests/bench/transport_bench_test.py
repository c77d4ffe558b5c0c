"""Smoke tests of the transport measurement machinery (not of its figures).

- transport_bench on loopback (tiny sizes): every row carries the old
  columns and the new ceilings (TCPn, memcpy, best), consistently;
- transport_bench on shaped links in network namespaces (skips where
  namespaces are not permitted): every row is compared with the link rate
  and the model, and stays under the rate; a delay on a kernel without netem
  is refused with exit code 3 and the reason;
- ab_pslite.py with stand-in binaries: alternation order, flags per side,
  medians, ratios, the target and the exit codes.

Environment (pytest_test.sh makes the paths absolute): TRANSPORT_BENCH,
PS_SERVER, AB_PSLITE.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

BENCH = os.environ.get('TRANSPORT_BENCH', 'bazel-bin/tests/bench/transport_bench')
SERVER = os.environ.get('PS_SERVER', 'bazel-bin/server/ps_server')
AB = os.environ.get('AB_PSLITE', 'tests/bench/ab_pslite.py')


def run_bench(tmp_path, *flags, timeout=240):
    out = tmp_path / 'bench.json'
    done = subprocess.run([BENCH, '--server_bin=' + SERVER, '--json_out=' + str(out)] +
                          list(flags), capture_output=True, text=True, timeout=timeout)
    doc = json.loads(out.read_text()) if done.returncode == 0 else None
    return done, doc


OLD_FIELDS = {'config', 'op', 'size', 'gbps', 'keys_per_s', 'p50_us', 'p99_us', 'ceiling_gbps',
              'ceiling_p50_us', 'ratio', 'p50_ratio', 'client_cpu_us_per_op',
              'server_cpu_us_per_op', 'grpc_floor_gbps', 'ratio_to_grpc_floor'}


def test_loopback_rows_carry_every_ceiling(tmp_path):
    done, doc = run_bench(tmp_path, '--configs=1x1,2x2', '--sizes=4096,262144',
                          '--ops=push,pull,push_pull', '--quick', '--reps_scale=0.2',
                          '--tcp_streams=2,3')
    assert done.returncode == 0, done.stderr
    assert doc['link'] is None
    assert {(r['config'], r['op'], r['size']) for r in doc['results']} == {
        (c, op, s) for c in ('1x1/cpu', '2x2/cpu') for op in ('push', 'pull', 'push_pull')
        for s in ('4096', '262144')}
    # Multi-connection ceilings: n in {2, 3} and S x W = 4 for 2x2; a 2x2
    # cell's total is both workers' exchange.
    streams = {(c['up_bytes'], c['down_bytes'], c['streams']) for c in doc['ceiling_tcp_streams']}
    assert (0, 262144, 2) in streams and (0, 262144, 3) in streams
    assert (0, 524288, 4) in streams and (0, 524288, 3) in streams
    assert (0, 262144, 4) not in streams  # 4 only comes from a 2x2 cell's S x W
    assert {m['bytes'] for m in doc['ceiling_memcpy']} >= {262145, 524290, 524288}
    for r in doc['results']:
        assert OLD_FIELDS <= set(r), r
        assert r['gbps'] > 0 and r['ceiling_gbps'] > 0 and r['memcpy_gbps'] > 0, r
        assert r['tcp_best_gbps'] >= r['tcp_streams_gbps'] > 0, r
        if r['workers'] == 1:
            assert r['tcp_best_gbps'] >= r['ceiling_gbps'], r
        assert r['best_ceiling_gbps'] == pytest.approx(
            max(r['tcp_best_gbps'], r['memcpy_gbps']), rel=1e-3), r
        expected = 'memcpy' if r['best_ceiling_gbps'] == pytest.approx(
            r['memcpy_gbps'], rel=1e-3) else 'tcp%d' % r['tcp_best_n']
        assert r['best_ceiling'] == expected, r
        assert r['ratio_best'] == pytest.approx(r['gbps'] / r['best_ceiling_gbps'], abs=2e-3)
        assert r['ratio_tcp_best'] == pytest.approx(r['gbps'] / r['tcp_best_gbps'], abs=2e-3)
        assert r['ratio'] == pytest.approx(r['gbps'] / r['ceiling_gbps'], abs=2e-3)
    table = done.stdout
    assert 'Multi-connection TCP ceiling' in table and 'vs best' in table


def netns_or_skip(done):
    if done.returncode == 3 and done.stderr.startswith('unavailable:') and \
            'netem' not in done.stderr:
        pytest.skip(done.stderr.strip())


RATE_MBIT = 200


def test_shaped_link_rows_stay_under_the_rate(tmp_path):
    # 40 operations of 64 KiB per cell: 2.6 MB per worker link, 20x tbf's
    # 128 KiB burst, so no cell can exceed the rate by more than ~5%.
    done, doc = run_bench(tmp_path, '--configs=1x1,2x2', '--sizes=65536', '--ops=push,pull',
                          '--quick', '--reps_scale=2', '--link_rate_mbit=%d' % RATE_MBIT)
    netns_or_skip(done)
    assert done.returncode == 0, done.stderr
    assert doc['link']['rate_bits_per_s'] == RATE_MBIT * 1000000
    assert doc['link']['rtt_us'] > 0
    assert doc['ceiling_memcpy'] == []  # the link, not memory, is the limit
    rate_gbps = RATE_MBIT / 8 / 1000
    for r in doc['results']:
        # A 64 KiB tensor lives on server 0 of 2: that server's link carries
        # both workers' bytes, so a 2x2 cell can carry one link's rate too.
        assert r['link_gbps'] == pytest.approx(rate_gbps, rel=1e-3), r
        assert 0.5 < r['link_fraction'] <= 1.05, r
        assert r['link_fraction'] == pytest.approx(r['gbps'] / r['link_gbps'], abs=2e-3)
        assert 0.5 < r['ratio_model'] <= 1.15, r
        assert r['model_gbps'] < r['link_gbps'], r
    assert 'Shaped links: every host link 200 Mbit/s' in done.stdout


def test_shaped_link_delay_needs_netem(tmp_path):
    done, _ = run_bench(tmp_path, '--configs=1x1', '--sizes=4096', '--ops=pull', '--quick',
                        '--link_rate_mbit=%d' % RATE_MBIT, '--link_rtt_us=50')
    netns_or_skip(done)
    if done.returncode == 0:
        pytest.skip('this kernel has netem: the delay is applied')
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith('unavailable: --link_rtt_us needs netem: '), done.stderr


# ------------------------------------------------------------- ab_pslite.py

FAKE = textwrap.dedent('''\
    #!/usr/bin/env python3
    # Stand-in for a benchmark binary: logs its call, writes a JSON document
    # whose gbps for every cell is the next number of its script.
    import json, os, sys
    name, script = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    log = os.environ['AB_LOG']
    calls = sum(1 for line in open(log) if line.split()[0] == name) if os.path.exists(log) else 0
    with open(log, 'a') as f:
        f.write(name + ' ' + ' '.join(args) + '\\n')
    values = [float(v) for v in script.split(',')]
    if values[calls] < 0:
        sys.exit(1)
    out = [a.split('=', 1)[1] for a in args if a.startswith('--json_out=')][0]
    rows = [{'config': '1x1/x', 'op': op, 'size': '1048576', 'gbps': values[calls] * k,
             'p50_us': 100.0 * k, 'tcp_best_gbps': 4.0}
            for k, op in ((1, 'push'), (2, 'pull'))]
    json.dump({'results': rows}, open(out, 'w'))
    ''')


def fake(tmp_path, name, script):
    impl = tmp_path / 'fake.py'
    impl.write_text(FAKE)
    path = tmp_path / name
    path.write_text('#!/bin/sh\nexec /usr/bin/python3 %s %s %s "$@"\n' % (impl, name, script))
    path.chmod(0o755)
    return str(path)


def run_ab(tmp_path, ours, theirs, *extra):
    env = dict(os.environ, AB_LOG=str(tmp_path / 'log'))
    return subprocess.run(['/usr/bin/python3', AB,
                           '--bench', ours, '--pslite', theirs] + list(extra),
                          capture_output=True, text=True, env=env, timeout=60)


def test_ab_pslite_alternates_and_takes_medians(tmp_path):
    ours = fake(tmp_path, 'ours', '3.0,1.0,2.4')
    theirs = fake(tmp_path, 'pslite', '1.0,2.0,1.5')
    summary = tmp_path / 'summary.json'
    done = run_ab(tmp_path, ours, theirs, '--rounds=3', '--target=1.2',
                  '--pslite_args=--key_bytes=0', '--json_out=' + str(summary), '--',
                  '--configs=1x1', '--sizes=1048576')
    log = (tmp_path / 'log').read_text().splitlines()
    assert [line.split()[0] for line in log] == ['ours', 'pslite', 'pslite', 'ours', 'ours',
                                                 'pslite']
    for line in log:
        args = line.split()[1:]
        assert args[:3] == ['--configs=1x1', '--sizes=1048576', '--ops=push,pull,push_pull']
        assert ('--key_bytes=0' in args) == line.startswith('pslite')
    cells = {c['op']: c for c in json.loads(summary.read_text())['cells']}
    push = cells['push']
    assert push['ours_gbps'] == 2.4 and push['pslite_gbps'] == 1.5
    assert push['ratio'] == pytest.approx(1.6)
    assert push['paired_ratio'] == pytest.approx(1.6)  # median of 3.0, 0.5, 1.6
    assert push['met'] and cells['pull']['met']
    assert cells['pull']['ours_gbps'] == pytest.approx(4.8)
    assert push['tcp_best_gbps'] == 4.0 and push['rounds'] == 3
    assert done.returncode == 0, done.stderr
    assert '1x1 push 1048576' in done.stdout


def test_ab_pslite_exit_codes(tmp_path):
    ours = fake(tmp_path, 'ours', '1.0,1.0')
    theirs = fake(tmp_path, 'pslite', '1.0,1.0')
    assert run_ab(tmp_path, ours, theirs, '--rounds=1', '--').returncode == 1  # 1.0x < 1.2x
    broken = fake(tmp_path, 'pslite2', '-1')
    done = run_ab(tmp_path, ours, broken, '--rounds=1', '--')
    assert done.returncode == 2 and 'failed (1)' in done.stderr
