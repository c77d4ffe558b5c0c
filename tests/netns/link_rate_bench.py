#!/usr/bin/python3
"""What a shaped test link achieves: iperf3 TCP goodput between two test hosts.

For each link (rate x round-trip time) it runs iperf3 from host "b" to host
"a" --runs times (its first 0.5 s, TCP's slow start, not counted) and reports
the median, as a fraction of the link's rate and of the ceiling: the same path
unshaped, measured in the same run (interleaved with the shaped runs). Round trips above 0 need netem and are left out (with
the reason) on kernels without it. Prints a table, then one JSON line.

  bazel run //tests/netns:link_rate_bench -- [--rates=1,10,25] [--rtts_us=0,50,500]
      [--seconds=2] [--runs=3] [--streams=1]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import netns  # noqa: E402

# A payload of 1448 bytes per 1514-byte frame (plus the 4-byte FCS tbf does
# not see): the most TCP goodput a link of rate R can carry is 0.956 R.
GOODPUT_PER_WIRE = 1448 / 1514


def iperf3(net, seconds, streams):
    srv = net.popen("a", ["iperf3", "-s", "-1", "--forceflush", "-B", net.addr("a")],
                    stdout=subprocess.PIPE, text=True)
    try:
        while "Server listening" not in srv.stdout.readline():
            pass
        run = net.run("b", ["iperf3", "-c", net.addr("a"), "-t", str(seconds),
                            "-P", str(streams), "-O", "0.5", "-J"], capture_output=True, text=True,
                      timeout=seconds + 30)
        if run.returncode != 0:
            raise RuntimeError(f"iperf3 failed: {run.stdout[-500:]} {run.stderr}")
        return json.loads(run.stdout)["end"]["sum_received"]["bits_per_second"]
    finally:
        srv.kill()
        srv.wait()


def shape(net, rate_bit, rtt_us):
    # Half the round trip on each direction of a's link; b's link unshaped.
    net.set_link("a", rate_bit=rate_bit, delay_us=rtt_us // 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="1,10,25", help="Gbit/s, comma-separated")
    parser.add_argument("--rtts_us", default="0,50,500", help="round trips, comma-separated")
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--streams", type=int, default=1)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    rtts = [int(r) for r in args.rtts_us.split(",")]

    with netns.Network(["a", "b"]) as net:
        links = [(r, t) for t in rtts for r in rates]
        skipped = []
        if net.netem_missing and any(t for _, t in links):
            skipped = [f"rtt {t} us: {net.netem_missing}" for t in rtts if t]
            links = [(r, t) for r, t in links if t == 0]
        ceiling, shaped = [], {link: [] for link in links}
        for _ in range(args.runs):  # interleaved: each round measures everything once
            shape(net, 0, 0)
            ceiling.append(iperf3(net, args.seconds, args.streams))
            for rate, rtt in links:
                shape(net, int(rate * 1e9), rtt)
                shaped[(rate, rtt)].append(iperf3(net, args.seconds, args.streams))
        shape(net, 0, 0)

    ceil = statistics.median(ceiling)
    load = os.getloadavg()
    print(f"iperf3 b -> a through the test switch, {args.streams} stream(s), "
          f"{args.seconds} s x {args.runs} runs (medians), load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {os.cpu_count()} CPUs")
    print(f"{'link':>14} {'rtt_us':>7} {'Gbit/s':>8} {'of link':>8} {'of max goodput':>15} "
          f"{'of ceiling':>11}")
    print(f"{'unshaped':>14} {0:>7} {ceil / 1e9:>8.2f} {'':>8} {'':>15} {1:>11.2f}")
    rows = []
    for (rate, rtt), values in shaped.items():
        got = statistics.median(values)
        rows.append({"rate_gbit": rate, "rtt_us": rtt, "gbit": got / 1e9,
                     "of_link": got / (rate * 1e9), "of_ceiling": got / ceil,
                     "runs_gbit": [v / 1e9 for v in values]})
        print(f"{rate:>9.1f} Gbit {rtt:>7} {got / 1e9:>8.2f} {got / (rate * 1e9):>8.2f} "
              f"{got / (rate * 1e9 * GOODPUT_PER_WIRE):>15.2f} {got / ceil:>11.2f}")
    for line in skipped:
        print("skipped:", line)
    print(json.dumps({"bench": "link_rate", "streams": args.streams, "seconds": args.seconds,
                      "runs": args.runs, "ceiling_gbit": ceil / 1e9,
                      "ceiling_runs_gbit": [v / 1e9 for v in ceiling], "links": rows,
                      "skipped": skipped, "loadavg": load}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except netns.Unavailable as e:
        print(f"unavailable: {e}", file=sys.stderr)
        sys.exit(3)
