#!/usr/bin/env python3
"""Where a small pull's time goes: our 1x1 path against the bare-gRPC floor.

Counts that do not depend on the machine's load (a shared 2-core machine
makes wall-clock profiles noise):
  - callgrind: user-space instructions per operation, in total, by library
    and by component (inclusive costs of the functions that bound each
    component: client encode, gRPC write, server decode, apply, response,
    client wake-up);
  - perf stat (software events): CPU time, context switches and system
    calls per operation, by call.
Each figure is per operation by difference: two runs with A and B
operations, (count(B) - count(A)) / (B - A), so start-up, connection set-up
and transport_bench's verification pass cancel out. Processes: ps_server
and one transport_bench worker (transport_bench --server_prefix /
--worker_prefix); the floor's peer and client (transport_bench --role=
grpc_echo / grpc_client, the exchange of a pull: its 16-byte header up, SIZE down).

usage: tests/bench/profile_pull.py [--bench PATH] [--server_bin PATH]
           [--size 4096] [--reps_scale A,B] [--tools callgrind,perf]
           [--out DIR] [--json_out FILE]

(transport_bench times 2000 x reps_scale operations at <= 4 KiB.) Needs
valgrind and perf (linux-perf); about 5 minutes on the loaded development
machine with the defaults.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, '../../bazel-bin/tests/bench/transport_bench')
SERVER = os.path.join(HERE, '../../bazel-bin/server/ps_server')

# Component -> function-name substrings whose inclusive cost bounds it (the
# first match in callgrind_annotate's list; costs of a thread's loop include
# everything it calls).
COMPONENTS = {
    'ours_client': [
        ('whole operation (caller thread: plan, encode, write start, wait)',
         'std::_Function_handler<absl::debian3::Status (), ps::bench::(anonymous namespace)'
         '::TimeDense('),
        ('client encode + send (DenseOp: plan, request, SerializeWithPayload, write start)',
         'ps::ClientImpl::DenseOp('),
        ('  of which gRPC write start (StartWrite)', 'ps::ServerConnection::StartWrite('),
        ('  of which request encoding (SerializeWithPayload)', 'ps::SerializeWithPayload('),
        ('client wait (Future::Wait: polling, gRPC read, decode, deliver)', 'ps::Future::Wait()'),
        ('  of which gRPC polling (CompletionQueue::AsyncNext: epoll, TCP, HTTP/2)',
         'grpc::CompletionQueue::AsyncNextInternal('),
        ('  of which response decode + copy + completion (OnResponse)',
         'ps::ServerConnection::OnResponse('),
        ('other threads (background poller, gRPC; noise around 0)', 'start_thread'),
    ],
    'ours_server': [
        ('completion-queue thread (everything of a small request)',
         'ps::PollCompletionQueue('),
        ('  gRPC polling (AsyncNext: epoll, TCP read/write, HTTP/2)',
         'grpc::CompletionQueue::AsyncNextInternal('),
        ('  request handling (OnReadDone: decode, process, respond)',
         'ps::DataStreamCall::OnReadDone('),
        ('    server decode (DecodeDataRequest)', 'ps::DecodeDataRequest('),
        ('    process (Shard::SubmitData: metrics, validate, liveness, policy, execute)',
         'ps::Shard::SubmitData(std::shared_ptr<ps::DataRequestView const>,'),
        ('      apply (ShardTable::Execute: the pull itself)', 'ps::ShardTable::Execute('),
        ('    response encode (SerializeDataResponse)', 'ps::SerializeDataResponse('),
        ('executor threads (noise around 0: small requests run inline)',
         'ps::Executor::WorkerLoop('),
    ],
    'floor_client': [
        ('whole exchange loop (MeasureGrpcFloor)', 'ps::bench::MeasureGrpcFloor('),
        ('  gRPC polling (AsyncNext)', 'grpc::CompletionQueue::AsyncNextInternal('),
    ],
    'floor_server': [
        ('echo loop (RunGrpcEcho)', 'ps::bench::RunGrpcEcho('),
        ('  gRPC polling (AsyncNext)', 'grpc::CompletionQueue::AsyncNextInternal('),
    ],
}

LIBS = [('ours', re.compile(r'transport_bench|ps_server')),
        ('gRPC', re.compile(r'libgrpc|libgpr|libupb|libaddress_sorting|libcares|libre2')),
        ('protobuf', re.compile(r'libprotobuf')),
        ('absl', re.compile(r'libabsl')),
        ('libc/libstdc++', re.compile(r'libc\.so|libstdc\+\+|libm\.so|ld-linux'))]

PERF_EVENTS = ['task-clock', 'context-switches', 'cpu-migrations', 'raw_syscalls:sys_enter'] + [
    'syscalls:sys_enter_' + c for c in
    ('sendmsg', 'recvmsg', 'epoll_wait', 'futex', 'write', 'read', 'eventfd2')]
# The eventfd wake-ups of gRPC's pollers are write()s and read()s of an
# eventfd; sendmsg / recvmsg carry the data.


def annotate(path, inclusive):
    """{function line: Ir} and the program total of a callgrind file."""
    out = subprocess.run(['callgrind_annotate', '--inclusive=' + ('yes' if inclusive else 'no'),
                          '--threshold=100', '--auto=no', path],
                         capture_output=True, text=True, check=True).stdout
    costs, total = {}, 0
    for line in out.splitlines():
        m = re.match(r'\s*([\d,]+)\s+(?:\([\d. %]+\)\s+)?(.*)$', line)
        if not m:
            continue
        n = int(m.group(1).replace(',', ''))
        if m.group(2).startswith('PROGRAM TOTALS'):
            total = n
        else:
            costs[m.group(2)] = costs.get(m.group(2), 0) + n
    return costs, total


def function_of(entry):
    """'file:function [object]' -> function (C++ names contain '::', files not)."""
    colon = re.search(r':(?!:)', entry)
    end = entry.rfind(' [')
    return entry[colon.end() if colon else 0:end if end > 0 else len(entry)]


def first_match(costs, needle):
    """Inclusive cost of the function whose name starts with `needle` (the
    largest, when overloads or clones match)."""
    return max((n for name, n in costs.items() if function_of(name).startswith(needle)),
               default=0)


def callgrind_summary(path):
    inc, total = annotate(path, True)
    exc, _ = annotate(path, False)
    libs = {name: 0 for name, _ in LIBS}
    libs['other'] = 0
    for fn, n in exc.items():
        obj = fn[fn.rfind('['):] if '[' in fn else ''
        for name, pattern in LIBS:
            if pattern.search(obj):
                libs[name] += n
                break
        else:
            libs['other'] += n
    return {'total': total, 'inclusive': inc, 'libs': libs}


def perf_counts(path):
    counts = {}
    with open(path) as f:
        for line in f:
            fields = line.strip().split(',')
            if len(fields) > 3 and not line.startswith('#'):
                try:
                    counts[fields[2]] = float(fields[0])
                except ValueError:
                    pass
    return counts


def prefix(tool, out):
    if tool == 'callgrind':
        return f'/usr/bin/valgrind --tool=callgrind --callgrind-out-file={out}'
    return f"/usr/bin/perf stat -x, -o {out} -e {','.join(PERF_EVENTS)} --"


def run_ours(opts, tool, scale, tmp):
    files = {k: os.path.join(tmp, f'{tool}_{k}_{scale}') for k in ('ours_server', 'ours_client')}
    cmd = [opts.bench, '--server_bin=' + opts.server_bin, '--configs=1x1',
           f'--sizes={opts.size}', '--ops=pull', f'--reps_scale={scale}', '--tcp_streams=',
           '--server_prefix=' + prefix(tool, files['ours_server']),
           '--worker_prefix=' + prefix(tool, files['ours_client'])]
    subprocess.run(cmd, check=True, capture_output=True, timeout=1800)
    return files


def run_floor(opts, tool, scale, tmp):
    files = {k: os.path.join(tmp, f'{tool}_{k}_{scale}') for k in ('floor_server', 'floor_client')}
    port_file = os.path.join(tmp, f'floor_port_{tool}_{scale}')
    echo = subprocess.Popen(prefix(tool, files['floor_server']).split() + [
        opts.bench, '--role=grpc_echo', '--port_file=' + port_file])
    for _ in range(1200):
        if os.path.exists(port_file) or echo.poll() is not None:
            break
        time.sleep(0.1)
    port = open(port_file).read().strip()
    subprocess.run(prefix(tool, files['floor_client']).split() + [
        opts.bench, '--role=grpc_client', f'--target=127.0.0.1:{port}',
        f'--exchanges=0:{opts.size}', f'--reps_scale={scale}',
        '--out=' + os.path.join(tmp, 'floor_out')], check=True, timeout=1800)
    if echo.wait(timeout=600) != 0:
        raise RuntimeError('grpc_echo failed')
    return files


def ops(scale):
    return int(2000 * scale)  # transport_bench's repetitions at <= 4 KiB


def main():
    p = argparse.ArgumentParser(usage=__doc__)
    p.add_argument('--bench', default=BENCH)
    p.add_argument('--server_bin', default=SERVER)
    p.add_argument('--size', type=int, default=4096)
    p.add_argument('--reps_scale', default='0.5,1.5')
    p.add_argument('--tools', default='callgrind,perf')
    p.add_argument('--out', default='')
    p.add_argument('--json_out', default='')
    opts = p.parse_args()
    a, b = (float(x) for x in opts.reps_scale.split(','))
    tmp = opts.out or tempfile.mkdtemp(prefix='profile_pull_')
    os.makedirs(tmp, exist_ok=True)
    n = ops(b) - ops(a)
    report = {'size': opts.size, 'ops_difference': n}
    for tool in opts.tools.split(','):
        runs = {}
        for scale in (a, b):
            runs[scale] = {**run_ours(opts, tool, scale, tmp), **run_floor(opts, tool, scale, tmp)}
            sys.stderr.write(f'{tool}: {ops(scale)} operations done\n')
        if tool == 'callgrind':
            report['callgrind'] = callgrind_report(runs[a], runs[b], n)
        else:
            report['perf'] = perf_report(runs[a], runs[b], n)
    print_report(report)
    if opts.json_out:
        with open(opts.json_out, 'w') as f:
            json.dump(report, f, indent=1)
    sys.stderr.write(f'raw files in {tmp}\n')


def callgrind_report(run_a, run_b, n):
    out = {}
    for proc in ('ours_client', 'ours_server', 'floor_client', 'floor_server'):
        sa, sb = callgrind_summary(run_a[proc]), callgrind_summary(run_b[proc])
        out[proc] = {
            'total': (sb['total'] - sa['total']) / n,
            'libs': {k: (sb['libs'][k] - sa['libs'][k]) / n for k in sa['libs']},
            'components': [(label, (first_match(sb['inclusive'], needle) -
                                    first_match(sa['inclusive'], needle)) / n)
                           for label, needle in COMPONENTS[proc]],
        }
    return out


def perf_report(run_a, run_b, n):
    out = {}
    for proc in ('ours_client', 'ours_server', 'floor_client', 'floor_server'):
        ca, cb = perf_counts(run_a[proc]), perf_counts(run_b[proc])
        out[proc] = {k: (cb.get(k, 0) - ca.get(k, 0)) / n for k in PERF_EVENTS}
        out[proc]['task-clock'] *= 1000  # msec -> us per operation
    return out


def print_report(report):
    print(f"Per {report['size']}-byte pull (1x1), by difference over "
          f"{report['ops_difference']} operations")
    if 'callgrind' in report:
        cg = report['callgrind']
        print('\nUser-space instructions per operation (callgrind):')
        for proc, r in cg.items():
            libs = ', '.join(f'{k} {v:,.0f}' for k, v in r['libs'].items())
            print(f"  {proc:13s} total {r['total']:>9,.0f}   ({libs})")
        for proc, r in cg.items():
            print(f'\n  {proc}:')
            for label, v in r['components']:
                print(f'    {v:>9,.0f}  {label}')
    if 'perf' in report:
        print('\nPer operation (perf stat, software events; task-clock in us of CPU):')
        procs = list(report['perf'])
        print('  ' + ' ' * 34 + ''.join(f'{p:>14s}' for p in procs))
        for event in PERF_EVENTS:
            print(f'  {event.replace("syscalls:sys_enter_", "syscall "):34s}' +
                  ''.join(f"{report['perf'][p][event]:14.2f}" for p in procs))


if __name__ == '__main__':
    main()
