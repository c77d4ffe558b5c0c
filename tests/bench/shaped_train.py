#!/usr/bin/python3
"""The main job over shaped links, against an analytic model (issue 21, item 5).

Two ps_servers in test hosts s0, s1 and two ps_workers in w0, w1 (each its own
network namespace of the test harness, tests/netns: its safety rules apply;
this script itself never talks to the test subnet) train the main job
(deploy/examples/fashion_mnist.yaml: 2 servers, 2 sync workers of batch 64)
for --epochs epochs with every host's link shaped by tbf to each rate of
--rates_mbit in both directions (0 = the namespaces' links unshaped). Rates
take turns within a round, their order rotated from round to round, and
each row reports medians over the rounds:

  step_ms     a worker's mean step time: training time (evaluation
              excluded) / steps, the slower worker's;
  compute_ms  the step's own work (batch, forward/backward; ps_worker's
              compute_ms_per_step), the slower worker's;
  rtt_us      the 64-byte TCP echo round trip w0 -> s0 on that link, p50;
  transfer_ms the time the model's bytes of one phase take on the link:
              (wire_bytes / 0.956 - tbf's burst) / rate (below);
  model_ms    compute_ms + 2 x transfer_ms + 3 x rtt;
  of_model    step_ms / model_ms (1.0 = the link and the step's own work
              are all the time there is);
  link_busy   2 x transfer_ms / step_ms: the share of a step the busiest
              link carries the model's bytes.

The model. A sync step is pull -> compute -> push -> Clock(), one after the
other (worker/ps_trainer.h): the parameters come down the busiest link, the
gradients go up it, and the pull, the push and the Clock() each cost at least
a round trip. wire_bytes is the busiest link's payload per direction per
phase: max(a worker's whole table, W x a server's share) = 4 x 235146 B here
with float32 values (2 bytes a value with a half-precision value_type)
(the table splits evenly over the servers, common/partition.h); goodput is
the rate x 1448 / 1514 (TCP payload per Ethernet frame at MTU 1500 with
timestamps; tbf counts the 14-byte header). The links idle between the
phases, so each phase begins with tbf's full bucket (netns.tbf_burst_bytes:
128 KiB up to 2 Gbit/s), which leaves at once: a real link has no such head
start, so on one the model's transfer would be that much longer (1.05 ms per
phase at 1 Gbit/s). Unshaped rows have no model (the veth path's own rate is
this machine's CPU, tests/netns/README.md).

Prints a table and a JSON line (also to --json_out). Needs root and
namespaces (exit 3 with the reason otherwise), the Debian package
dataset-fashion-mnist, and opt builds of the binaries:

  bazel build -c opt //server:ps_server //worker:ps_worker
  /usr/bin/python3 tests/bench/shaped_train.py [--rates_mbit 0,1000,500]
      [--rounds 3] [--epochs 1] [--server_bin PATH] [--worker_bin PATH]
      [--json_out FILE]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.normpath(os.path.join(HERE, '../..'))
sys.path.insert(0, os.path.join(REPO, 'tests/netns'))

import netns  # noqa: E402

SERVERS = ['s0', 's1']
WORKERS = ['w0', 'w1']
PORT = 50051
ECHO_PORT = 7000
GOODPUT_PER_WIRE = 1448 / 1514
ROUND_TRIPS_PER_STEP = 3  # pull, push, Clock()
START_TIMEOUT_S = 30
RUN_TIMEOUT_S = 900

VALUE_BYTES = {'float32': 4, 'float16': 2, 'bfloat16': 2}

DONE = re.compile(r'DONE worker=\d+ .* samples_per_s=([\d.]+) .*'
                  r'compute_ms_per_step=([\d.]+)')
FINAL = re.compile(r'FINAL worker=0 steps=\d+ test_accuracy=([\d.]+)')


def write_config(net, source, epochs, path):
    with open(source) as f:
        config = yaml.safe_load(f)
    config['cluster']['servers'] = [f'{net.addr(h)}:{PORT}' for h in SERVERS]
    config['cluster']['num_workers'] = len(WORKERS)
    config['training']['epochs'] = epochs
    config['training']['eval_every_steps'] = 0  # only the final evaluation
    config['training']['device'] = 'cpu'
    with open(path, 'w') as f:
        yaml.safe_dump(config, f)
    return config


def wire_bytes(config):
    """The busiest link's payload per direction per phase (module doc)."""
    (table,) = [t for t in config['tables'] if t['kind'] == 'dense']
    # Bytes per value on the wire: the table's value_type (float32 default).
    value_bytes = VALUE_BYTES[table.get('value_type', 'float32')]
    table_bytes = value_bytes * table['size']
    share = -(-table['size'] // len(SERVERS)) * value_bytes  # the largest shard
    return max(table_bytes, len(WORKERS) * share)


def echo_rtt_us(net, samples=200):
    """p50 of a 64-byte TCP echo w0 -> s0 (tests/netns/nettool.py)."""
    tool = os.path.join(REPO, 'tests/netns/nettool.py')
    server = net.popen('s0', [sys.executable, tool, 'echo-server', str(ECHO_PORT)],
                       stdout=subprocess.PIPE, text=True)
    try:
        if server.stdout.readline().strip() != 'listening':
            raise RuntimeError('echo server did not start')
        session = net.popen('w0', [sys.executable, tool, 'session', net.addr('s0'),
                                   str(ECHO_PORT)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if session.stdout.readline().strip() != 'connected':
                raise RuntimeError('echo session did not connect')
            rtts = []
            for _ in range(samples):
                session.stdin.write('send\n')
                session.stdin.flush()
                kind, _, value = session.stdout.readline().strip().partition(' ')
                if kind != 'ok':
                    raise RuntimeError(f'echo failed: {kind} {value}')
                rtts.append(int(value))
            return statistics.median(rtts)
        finally:
            session.kill()
            session.wait()
    finally:
        server.kill()
        server.wait()


def wait_for_files(paths, procs, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not all(os.path.exists(p) for p in paths):
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f'a server exited ({proc.returncode}) before listening')
        if time.monotonic() > deadline:
            raise RuntimeError(f'servers not listening after {timeout_s} s')
        time.sleep(0.05)


def train_once(net, binaries, config_path, batch, work):
    """One training run; returns (step_ms, compute_ms, accuracy) of the job."""
    servers, workers = [], []
    try:
        port_files = []
        for i, host in enumerate(SERVERS):
            port_file = os.path.join(work, f'port_{i}')
            if os.path.exists(port_file):
                os.remove(port_file)
            port_files.append(port_file)
            log = open(os.path.join(work, f'server_{i}.log'), 'w')
            servers.append(net.popen(host, [binaries.server_bin,
                                            f'--config={config_path}', f'--index={i}',
                                            f'--port_file={port_file}'],
                                     stdout=log, stderr=subprocess.STDOUT))
        wait_for_files(port_files, servers, START_TIMEOUT_S)
        for i, host in enumerate(WORKERS):
            workers.append(net.popen(host, [binaries.worker_bin,
                                            f'--config={config_path}', f'--index={i}',
                                            '--blas_threads=1', '--log_every_steps=0'],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True))
        outputs = [w.communicate(timeout=RUN_TIMEOUT_S)[0] for w in workers]
        for i, (w, out) in enumerate(zip(workers, outputs)):
            if w.returncode != 0:
                raise RuntimeError(f'worker {i} failed ({w.returncode}):\n{out[-3000:]}')
        step_ms, compute_ms = [], []
        for out in outputs:
            done = DONE.search(out)
            if done is None:
                raise RuntimeError(f'no DONE line:\n{out[-3000:]}')
            samples_per_s = float(done.group(1))
            step_ms.append(1e3 * batch / samples_per_s)
            compute_ms.append(float(done.group(2)))
        final = FINAL.search(outputs[0])
        if final is None:
            raise RuntimeError(f'no FINAL line:\n{outputs[0][-3000:]}')
        return max(step_ms), max(compute_ms), float(final.group(1))
    finally:
        for proc in workers + servers:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def shape_all(net, rate_mbit):
    for host in SERVERS + WORKERS:
        net.set_link(host, rate_bit=int(rate_mbit * 1e6))


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--rates_mbit', default='0,1000,500')
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--epochs', type=int, default=1)
    p.add_argument('--server_bin', default=os.path.join(REPO, 'bazel-bin/server/ps_server'))
    p.add_argument('--worker_bin', default=os.path.join(REPO, 'bazel-bin/worker/ps_worker'))
    p.add_argument('--config',
                   default=os.path.join(REPO, 'deploy/examples/fashion_mnist.yaml'))
    p.add_argument('--json_out', default='')
    args = p.parse_args()
    rates = [float(r) for r in args.rates_mbit.split(',')]

    runs = {rate: [] for rate in rates}
    with tempfile.TemporaryDirectory(prefix='shaped_train_') as work, \
            netns.Network(SERVERS + WORKERS) as net:
        config_path = os.path.join(work, 'config.yaml')
        config = write_config(net, args.config, args.epochs, config_path)
        for r in range(args.rounds):
            order = rates[r % len(rates):] + rates[:r % len(rates)]
            for rate in order:
                shape_all(net, rate)
                rtt = echo_rtt_us(net)
                step, compute, acc = train_once(net, args, config_path,
                                               config['training']['batch_size'], work)
                drops = net.shaper_drops()
                runs[rate].append({'step_ms': step, 'compute_ms': compute, 'rtt_us': rtt,
                                   'accuracy': acc, 'tbf_drops': drops,
                                   'loadavg': os.getloadavg()[0]})
                print(f'round {r + 1} rate {rate:g} Mbit/s: step {step:.2f} ms, compute '
                      f'{compute:.2f} ms, rtt {rtt:.0f} us, accuracy {acc:.4f}, '
                      f'{drops} packets dropped by the shapers', file=sys.stderr, flush=True)
        shape_all(net, 0)

    wire = wire_bytes(config)
    rows = []
    print(f'main job, {len(SERVERS)} servers x {len(WORKERS)} sync workers, {args.epochs} '
          f'epoch(s), {args.rounds} rounds (medians); wire bytes per direction per phase '
          f'{wire}; {os.cpu_count()} CPUs')
    print(f'{"rate":>12} {"step_ms":>8} {"compute_ms":>10} {"rtt_us":>7} {"transfer_ms":>11} '
          f'{"model_ms":>9} {"of_model":>9} {"link_busy":>10} {"accuracy":>9}')
    for rate in rates:
        med = {k: statistics.median(x[k] for x in runs[rate])
               for k in ('step_ms', 'compute_ms', 'rtt_us', 'accuracy')}
        row = {'rate_mbit': rate, **med, 'runs': runs[rate]}
        if rate > 0:
            rate_bit = int(rate * 1e6)
            frame_bytes = wire / GOODPUT_PER_WIRE
            beyond_burst = max(0.0, frame_bytes - netns.tbf_burst_bytes(rate_bit))
            transfer_ms = beyond_burst * 8 / rate_bit * 1e3
            row['transfer_ms'] = transfer_ms
            row['model_ms'] = (med['compute_ms'] + 2 * transfer_ms
                               + ROUND_TRIPS_PER_STEP * med['rtt_us'] / 1e3)
            row['of_model'] = med['step_ms'] / row['model_ms']
            row['link_busy'] = 2 * transfer_ms / med['step_ms']
            model = (f'{transfer_ms:>11.2f} {row["model_ms"]:>9.2f} {row["of_model"]:>9.3f} '
                     f'{row["link_busy"]:>10.3f}')
        else:
            model = f'{"-":>11} {"-":>9} {"-":>9} {"-":>10}'
        name = f'{rate:g} Mbit/s' if rate > 0 else 'unshaped'
        print(f'{name:>12} {med["step_ms"]:>8.2f} {med["compute_ms"]:>10.2f} '
              f'{med["rtt_us"]:>7.0f} {model} {med["accuracy"]:>9.4f}')
        rows.append(row)
    doc = {'bench': 'shaped_train', 'epochs': args.epochs, 'rounds': args.rounds,
           'wire_bytes': wire, 'goodput_per_wire': GOODPUT_PER_WIRE,
           'round_trips_per_step': ROUND_TRIPS_PER_STEP, 'rows': rows,
           'time': time.strftime('%Y-%m-%dT%H:%M:%S')}
    print('JSON ' + json.dumps(doc, sort_keys=True))
    if args.json_out:
        with open(args.json_out, 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except netns.Unavailable as e:
        print(f'unavailable: {e}', file=sys.stderr)
        sys.exit(3)
