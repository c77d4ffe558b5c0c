"""Tests of the network-namespace harness itself (netns.py), with real sockets.

Each test builds its own network; where namespaces are not permitted (not
root, no `ip`, `ip netns add` refused) every test skips with the reason, and a
test that needs a missing feature (netem delay on a kernel without
sch_netem, iperf3) skips with that reason.

  bazel test //tests/netns:netns_harness_test
  /usr/bin/python3 -m pytest tests/netns/netns_test.py      # by hand, as root
"""

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import netns  # noqa: E402

NETTOOL = os.path.join(HERE, "nettool.py")
NETNS_PY = os.path.join(HERE, "netns.py")
PORT = 7000


@pytest.fixture
def network():
    """make(hosts) -> an open netns.Network, closed after the test; skips where unavailable."""
    opened = []

    def make(hosts):
        try:
            net = netns.Network(hosts)
        except netns.Unavailable as e:
            pytest.skip(str(e))
        opened.append(net)
        return net

    yield make
    for net in opened:
        net.close()


def run_leftovers(run_id):
    """What run `run_id` left on the machine: namespaces, the blackhole route, the lock file."""
    left = [n for n in netns._netns_list() if n.startswith(f"psn{run_id}-")]
    if run_id in netns._blackhole_metrics():
        left.append(f"blackhole route metric {run_id}")
    if os.path.exists(netns._lock_path(run_id)):
        left.append(netns._lock_path(run_id))
    return left


def wait_until(predicate, timeout_s, step_s=0.05):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)
    return True


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def root_links():
    return set(re.findall(r"^\d+: ([^:@]+)", subprocess.run(
        [netns._ip(), "-o", "link"], capture_output=True, text=True).stdout, re.M))


class Echo:
    """An echo server in `server_host` and a client session in `client_host`."""

    def __init__(self, net, server_host, client_hosts):
        self.server = net.popen(server_host, [sys.executable, NETTOOL, "echo-server", str(PORT)],
                                stdout=subprocess.PIPE, text=True)
        assert self.server.stdout.readline().strip() == "listening"
        self.sessions = {}
        for h in client_hosts:
            p = net.popen(h, [sys.executable, NETTOOL, "session", net.addr(server_host),
                              str(PORT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, bufsize=1)
            assert p.stdout.readline().strip() == "connected", h
            self.sessions[h] = p

    def do(self, host, command):
        """("ok"|"timeout"|"error", seconds the command took)."""
        p = self.sessions[host]
        start = time.monotonic()
        p.stdin.write(command + "\n")
        p.stdin.flush()
        reply = p.stdout.readline().split()
        return reply[0] if reply[0] != "error" else " ".join(reply), time.monotonic() - start

    def rtt_us(self, host, n):
        """Median echo round trip from `host` over n tries, in microseconds."""
        rtts = []
        for _ in range(n):
            self.sessions[host].stdin.write("send\n")
            self.sessions[host].stdin.flush()
            kind, value = self.sessions[host].stdout.readline().split()
            assert kind == "ok"
            rtts.append(int(value))
        return sorted(rtts)[n // 2]

    def close(self):
        for p in list(self.sessions.values()) + [self.server]:
            p.kill()
            p.wait()


# ---------------------------------------------------------------- topology


def test_hosts_talk_and_the_root_namespace_cannot_reach_them(network):
    before = root_links()
    net = network(["a", "b"])
    assert net.subnet == netns.SUBNET
    assert net.addr("a") == "10.213.0.1" and net.addr("b") == "10.213.0.2"
    # The guard route, with this run's id as its metric.
    routes = subprocess.run([netns._ip(), "route", "show", "type", "blackhole", netns.SUBNET],
                            capture_output=True, text=True).stdout
    assert f"blackhole {netns.SUBNET} metric {net.run_id}" in routes
    assert root_links() == before  # every interface of the run lives inside its namespaces
    echo = Echo(net, "a", ["b"])
    assert echo.do("b", "send")[0] == "ok"
    # From the root namespace the test subnet is a blackhole: refused at once, never sent out.
    with socket.socket() as s:
        s.settimeout(2)
        with pytest.raises(OSError) as err:
            s.connect((net.addr("a"), PORT))
        assert err.value.errno == 22  # EINVAL: the blackhole route
    echo.close()


def test_bad_host_names_and_commands_are_errors(network):
    with pytest.raises(netns.HarnessError, match="bad host name"):
        netns.Network(["A"])
    with pytest.raises(netns.HarnessError, match="distinct"):
        netns.Network(["a", "a"])
    net = network(["a", "b"])
    with pytest.raises(netns.HarnessError, match="unknown host 'zz'"):
        net.cut("a", "zz")
    with pytest.raises(netns.HarnessError, match="loss in"):
        net.set_link("a", loss_pct=101)
    with pytest.raises(netns.HarnessError, match="two different hosts"):
        net.cut("a", "a")


# -------------------------------------------------------------- partitions


def test_cut_is_silent_both_ways_and_heals(network):
    net = network(["a", "b", "c"])
    echo = Echo(net, "a", ["b", "c"])
    assert echo.do("b", "send")[0] == "ok"
    net.cut("a", "b")
    # Silent: no error on b's side, just no answer (the session times out after 1 s).
    result, took = echo.do("b", "send")
    assert result == "timeout" and took >= 0.9
    assert echo.do("b", "connect")[0] == "timeout"
    # c, on a's side of the cut, is served meanwhile.
    assert echo.do("c", "send")[0] == "ok"
    net.heal("a", "b")
    assert echo.do("b", "connect")[0] == "connected"
    assert echo.do("b", "send")[0] == "ok"
    echo.close()


def test_isolate_drops_everything_until_healed(network):
    net = network(["a", "b", "c"])
    echo = Echo(net, "a", ["b", "c"])
    net.isolate("a")
    assert echo.do("b", "send")[0] == "timeout"
    assert echo.do("c", "connect")[0] == "timeout"
    net.heal()
    # New connections (a session closes its connection after a timeout).
    for host in ("b", "c"):
        assert echo.do(host, "connect")[0] == "connected"
        assert echo.do(host, "send")[0] == "ok"
    echo.close()


def test_link_down_fails_own_connects_at_once_and_is_silent_for_peers(network):
    net = network(["a", "b"])
    echo = Echo(net, "a", ["b"])
    net.link_down("b")
    result, took = echo.do("b", "connect")
    assert result == "error ENETUNREACH" and took < 0.5
    net.link_up("b")
    assert echo.do("b", "connect")[0] == "connected"
    net.link_down("a")  # the server's side: b sees silence
    assert echo.do("b", "send")[0] == "timeout"
    net.link_up("a")
    assert echo.do("b", "connect")[0] == "connected"
    assert echo.do("b", "send")[0] == "ok"
    echo.close()


def test_loss_drops_that_fraction(network):
    net = network(["a", "b"])
    # b learns a's MAC first: with the loss on, a dropped ARP request or
    # reply would hold b's first datagrams until ARP retries (about 1 s),
    # dropping those beyond the kernel's small unresolved queue, so far more
    # than 30% would be lost at random.
    net.run("b", [sys.executable, NETTOOL, "udp-send", net.addr("a"), "9001", "1"],
            check=True)
    net.set_link("a", loss_pct=30)
    sink = net.popen("a", [sys.executable, NETTOOL, "udp-count", "9000", "1"],
                     stdout=subprocess.PIPE, text=True)
    assert sink.stdout.readline().strip() == "listening"
    sent = 2000
    net.run("b", [sys.executable, NETTOOL, "udp-send", net.addr("a"), "9000", str(sent)],
            check=True)
    received = int(sink.stdout.readline())
    sink.wait()
    # Binomial(2000, 0.7): mean 1400, sd 20.5; 6 sd either side.
    assert abs(received - 0.7 * sent) <= 125, received
    net.set_link("a")  # loss removed
    rules = subprocess.run([netns._ip(), "netns", "exec", net.switch_netns,
                            netns._tool("nft"), "list", "ruleset"],
                           capture_output=True, text=True).stdout
    assert "numgen" not in rules


# ------------------------------------------------------------------ shaping


def iperf3_gbit(net, server, client, seconds=1.5):
    """TCP goodput from `client` to `server` measured by iperf3, in Gbit/s."""
    if shutil.which("iperf3") is None:
        pytest.skip("no iperf3 (Debian package iperf3; .ci/install_deps.sh installs it)")
    srv = net.popen(server, ["iperf3", "-s", "-1", "--forceflush", "-B", net.addr(server)],
                    stdout=subprocess.PIPE, text=True)
    try:
        assert "Server listening" in srv.stdout.readline() + srv.stdout.readline()
        # -O: TCP's slow start is not counted.
        run = net.run(client, ["iperf3", "-c", net.addr(server), "-t", str(seconds),
                               "-O", "0.2", "-J"],
                      capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        srv.kill()
        srv.wait()
    return json.loads(run.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9


@pytest.mark.parametrize("mbit", [100, 250])
def test_rate_shaping_holds_the_link_to_its_rate(network, mbit):
    # Rates far below what even a busy 2-core machine moves (3+ Gbit/s), so
    # the shaper, not the CPU, sets the result.
    net = network(["a", "b"])
    net.set_link("a", rate_bit=mbit * 1_000_000)
    runs = []
    # Never above the rate; at it (TCP payload over 1500-byte frames is 0.956
    # of the wire rate tbf counts) in the best of three runs, as a run can be
    # starved of CPU on a machine shared by many builds.
    while len(runs) < 3 and (not runs or runs[-1] < 0.85 * mbit):
        runs.append(iperf3_gbit(net, "a", "b", seconds=1) * 1000)
        assert runs[-1] <= 1.02 * mbit, f"{runs} Mbit/s on a {mbit} Mbit/s link"
    assert max(runs) >= 0.85 * mbit, f"{runs} Mbit/s on a {mbit} Mbit/s link"


def test_delay_adds_to_the_round_trip(network):
    net = network(["a", "b"])
    if net.netem_missing:
        pytest.skip(net.netem_missing)
    echo = Echo(net, "a", ["b"])
    base = echo.rtt_us("b", 41)
    net.set_link("b", delay_us=2000)  # both directions of b's link: +4 ms per round trip
    delayed = echo.rtt_us("b", 41)
    assert 3500 <= delayed - base <= 6000, (base, delayed)
    net.set_link("b")
    assert echo.rtt_us("b", 41) - base < 1500
    echo.close()


# ----------------------------------------------------------------- clean-up


def test_close_removes_everything_and_kills_processes_left_inside(network):
    before = root_links()
    net = network(["a", "b"])
    sleeper = net.popen("b", ["sleep", "1000"])
    run_id = net.run_id
    assert len(run_leftovers(run_id)) == 5  # namespaces a, b and switch, route, lock
    inodes = [os.stat(f"/run/netns/{n}").st_ino
              for n in (net.netns("a"), net.netns("b"), net.switch_netns)]
    # The sleeper enters its namespace a moment after popen returns (`ip
    # netns exec` joins it, then execs): wait for it (a CI run once looked
    # too early and found nobody).
    deadline = time.monotonic() + 5
    while not netns._pids_in(inodes) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(netns._pids_in(inodes)) == 1  # the sleeper
    net.close()
    assert run_leftovers(run_id) == []
    assert sleeper.wait(timeout=5) == -signal.SIGKILL
    assert root_links() == before


CHILD = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    sys.path.insert(0, {here!r})
    import netns
    how = sys.argv[1]
    with netns.Network(["a", "b"]) as net:
        sleeper = net.popen("a", ["sleep", "1000"])
        print(net.run_id, sleeper.pid, net.owner_pid, flush=True)
        time.sleep(0.2)
        if how == "assert":
            assert net.addr("a") == "nowhere", "a deliberately failing assertion"
        elif how == "exception":
            raise RuntimeError("a deliberate exception")
        elif how == "abort":
            os.abort()  # a crash: no clean-up code of ours runs
        time.sleep(1000)  # until a signal
""")


def start_child(how):
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(here=HERE), how],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = child.stdout.readline()
    if not line:
        err = child.stderr.read()
        if "Unavailable" in err:
            pytest.skip(err.strip().splitlines()[-1])
        raise AssertionError(f"child failed: {err}")
    run_id, sleeper, owner = (int(w) for w in line.split())
    return child, run_id, sleeper, owner


@pytest.mark.parametrize("how", ["assert", "exception", "abort", "SIGINT", "SIGTERM",
                                 "SIGKILL"])
def test_everything_removed_when_the_test_process_fails_or_dies(how):
    if netns.unavailable_reason():
        pytest.skip(netns.unavailable_reason())
    child, run_id, sleeper, owner = start_child(how)
    try:
        assert len(run_leftovers(run_id)) == 5
        if how.startswith("SIG"):
            child.send_signal(getattr(signal, how))
        assert child.wait(timeout=30) != 0
    finally:
        child.kill()
        child.wait()
    assert wait_until(lambda: not run_leftovers(run_id), 15), run_leftovers(run_id)
    assert not pid_alive(sleeper)
    assert wait_until(lambda: not pid_alive(owner), 5)


def test_a_run_whose_owner_was_killed_is_swept_by_the_next(network):
    if netns.unavailable_reason():
        pytest.skip(netns.unavailable_reason())
    child, run_id, sleeper, owner = start_child("wait")
    # Kill the owner first, so nothing cleans up: the run is left behind.
    os.kill(owner, signal.SIGKILL)
    # Its lock is held here while the leftovers are checked: a network that
    # another test starts meanwhile would sweep the run first (as it should).
    lock = os.open(netns._lock_path(run_id), os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # free once the owner is gone
        child.kill()
        child.wait()
        time.sleep(0.2)
        assert len(run_leftovers(run_id)) == 5
        assert pid_alive(sleeper)
    finally:
        os.close(lock)
    net = network(["a"])  # sweeps stale runs before it builds
    assert run_leftovers(run_id) == []
    assert wait_until(lambda: not pid_alive(sleeper), 5)
    assert run_leftovers(net.run_id) != []  # the new run itself is live and untouched


def test_a_live_run_is_never_swept(network):
    first = network(["a"])
    netns.sweep_stale()
    network(["a"])  # sweeps too
    assert len(run_leftovers(first.run_id)) == 4  # namespaces a and switch, route, lock
    first.close()
    assert run_leftovers(first.run_id) == []


# ----------------------------------------------------------------- skipping


def test_without_root_it_says_unavailable():
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to drop to another user")
    # The source on stdin: the user may not be allowed to read the file where it is.
    with open(NETNS_PY) as source:
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                sys.executable, "-", "probe"], stdin=source,
                               capture_output=True, text=True)
    assert probe.returncode == 3, probe
    assert probe.stdout.strip() == "unavailable: network namespaces need root (running as uid 65534)"


def test_where_ip_netns_add_is_refused_it_says_unavailable(tmp_path):
    if netns.unavailable_reason():
        pytest.skip(netns.unavailable_reason())
    # A restricted container: `ip netns add` fails, everything else works.
    fake = tmp_path / "ip"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = netns ] && [ "$2" = add ]; then
          echo 'mount --make-shared /run/netns failed: Operation not permitted' >&2; exit 1
        fi
        exec {netns._ip()} "$@"
        """))
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ.get('PATH', '')}")
    probe = subprocess.run([sys.executable, NETNS_PY, "probe"], capture_output=True, text=True,
                           env=env)
    assert probe.returncode == 3, probe
    assert probe.stdout.startswith("unavailable: `ip netns add` is not permitted here:")
    assert "Operation not permitted" in probe.stdout
