#!/usr/bin/env python3
"""A test network of Linux network namespaces: every test "host" is a namespace.

Used by C++ tests through tests/netns/netns.h and by Python tests through the
`Network` class below; both drive one owner process (`netns.py serve`), which
builds the network, applies faults on request and removes everything when its
test goes away, however that happens. README.md in this directory has the
safety rules and examples.

Layout of one run (run id N, a random number that is unique among live runs):

    psnN-sw     the switch: a bridge `br0` with one port `p<i>` per host
    psnN-<h>    host h: `lo` and `eth0` (10.213.0.<i+1>/24), veth peer of p<i>
    root ns     `blackhole 10.213.0.0/24 metric N`: nothing for the test subnet
                can leave through the default route, even while a link is down

Faults, all made inside the run's namespaces:
  * drops (cut between two hosts, isolation of a host, random loss) are
    nftables rules on the switch's ports (netdev ingress / egress hooks): the
    senders see nothing, as with a pulled cable or netem loss 100%, and they
    work on kernels without sch_netem;
  * `down` / `up` set a host's own eth0 down inside its namespace (its sends
    then fail at once with "Network is unreachable");
  * rate: tbf; delay / jitter: netem (with netem's own rate when both are
    asked), each on both directions of the host's link (eth0 egress = upload,
    switch port egress = download).

Clean-up on every exit: the owner process holds an flock on
/run/ps-netns/N.lock for the run's lifetime; when the test process ends
(normally, by an exception, a signal or a crash) the owner sees its stdin
close (or its parent change), kills every process still inside the run's
namespaces and deletes the namespaces (and with them every veth and the
bridge) and the blackhole route. If the owner itself is killed, the next run
sweeps every run whose lock nobody holds before it starts.
"""

import fcntl
import ipaddress
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

SUBNET = "10.213.0.0/24"  # the test subnet: private, never routed from the root namespace
NAME_PREFIX = "psn"  # namespaces are named psn<run id>-<host>
STATE_DIR = "/run/ps-netns"  # <run id>.lock, flocked by the run's owner process
SWITCH = "sw"
_HOST_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_RUN_NS = re.compile(r"^" + NAME_PREFIX + r"(\d+)-")
_MAX_HOSTS = 200
_TOOL_DIRS = "/usr/sbin:/sbin:/usr/bin:/bin"


class Unavailable(Exception):
    """This machine cannot run namespace tests (or lacks one feature); the message says why."""


class HarnessError(Exception):
    """A command of the harness failed."""


def _tool(name):
    """Absolute path of an iproute2 / nftables tool, or None (Bazel's PATH lacks /usr/sbin)."""
    path = os.environ.get("PATH", "") + ":" + _TOOL_DIRS
    return shutil.which(name, path=path)


def _run(argv, input_text=None, check=True, timeout=20):
    proc = subprocess.run(argv, input=input_text, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise HarnessError(f"{' '.join(argv)}: {(proc.stderr or proc.stdout).strip()}")
    return proc


def _ip():
    ip = _tool("ip")
    if ip is None:
        raise Unavailable("no `ip` binary (Debian package iproute2)")
    return ip


def _netns_list():
    out = _run([_ip(), "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pids_in(inodes):
    """Processes whose network namespace is one of `inodes` (what `ip netns pids` does)."""
    wanted = {f"net:[{inode}]" for inode in inodes}
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/net") in wanted:
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def _kill_all(inodes, timeout_s=5.0):
    """SIGKILLs every process in the namespaces until none is left (or the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = _pids_in(inodes)
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def _blackhole_metrics():
    out = _run([_ip(), "route", "show", "type", "blackhole", SUBNET], check=False).stdout
    return [int(m) for m in re.findall(r"metric (\d+)", out)]


def _remove_run(run_id):
    """Removes everything of run `run_id`: processes in its namespaces, the namespaces, the route."""
    names = [n for n in _netns_list() if n.startswith(f"{NAME_PREFIX}{run_id}-")]
    # Held open until the end: a namespace cannot be freed meanwhile, so its
    # inode number cannot be reused by another run's namespace we would then
    # kill processes in.
    fds = []
    for name in names:
        try:
            fds.append(os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            pass
    inodes = [os.fstat(fd).st_ino for fd in fds]
    try:
        left = _kill_all(inodes)
        for name in names:
            _run([_ip(), "netns", "del", name], check=False)
        # A process that entered a namespace while it was being deleted keeps
        # it (and its veth) alive without a name: found by inode, killed too.
        left = _kill_all(inodes, timeout_s=2.0) or left
    finally:
        for fd in fds:
            os.close(fd)
    if run_id in _blackhole_metrics():
        _run([_ip(), "route", "del", "blackhole", SUBNET, "metric", str(run_id)], check=False)
    if left:
        raise HarnessError(f"processes {left} in the test namespaces of run {run_id} survived SIGKILL")


def _lock_path(run_id):
    return f"{STATE_DIR}/{run_id}.lock"


def sweep_stale():
    """Removes every run whose owner is gone (its lock file is missing or not held)."""
    ids = {int(m.group(1)) for n in _netns_list() if (m := _RUN_NS.match(n))}
    ids.update(_blackhole_metrics())
    if os.path.isdir(STATE_DIR):
        ids.update(int(f[:-5]) for f in os.listdir(STATE_DIR) if re.match(r"^\d+\.lock$", f))
    swept = []
    for run_id in sorted(ids):
        try:
            fd = os.open(_lock_path(run_id), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = None
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live run
            _remove_run(run_id)
            swept.append(run_id)
            if fd is not None:
                os.unlink(_lock_path(run_id))  # still holding the lock
        finally:
            if fd is not None:
                os.close(fd)
    return swept


def _acquire_run_id():
    """A fresh run id and the fd of its lock file, locked (a run is live while this is held)."""
    os.makedirs(STATE_DIR, mode=0o700, exist_ok=True)
    for _ in range(1000):
        run_id = random.randint(1, 99999)
        tmp = f"{STATE_DIR}/.{os.getpid()}.{run_id}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # link(2) publishes the lock file already locked, and fails when the id is taken.
            os.link(tmp, _lock_path(run_id))
        except FileExistsError:
            os.close(fd)
            continue
        finally:
            os.unlink(tmp)
        os.write(fd, f"{os.getpid()}\n".encode())
        return run_id, fd
    raise HarnessError(f"no free run id in {STATE_DIR}")


def unavailable_reason():
    """Why namespace tests cannot run here (cheap checks only), or None."""
    if os.geteuid() != 0:
        return f"network namespaces need root (running as uid {os.geteuid()})"
    if _tool("ip") is None:
        return "no `ip` binary (Debian package iproute2)"
    return None


def tbf_burst_bytes(rate_bit):
    """The bucket of a link shaped to `rate_bit`: 0.5 ms of traffic, at least
    two 64 KiB GSO packets. An idle link sends that many bytes (Ethernet
    frames as tbf counts them) at once before the rate applies."""
    return max(128 * 1024, rate_bit // 8 // 2000)


class _Topology:
    """One run's namespaces, links and faults. Lives in the owner process only."""

    def __init__(self, hosts):
        reason = unavailable_reason()
        if reason:
            raise Unavailable(reason)
        if len(set(hosts)) != len(hosts) or len(hosts) > _MAX_HOSTS:
            raise HarnessError(f"hosts must be distinct, at most {_MAX_HOSTS}: {hosts}")
        for h in hosts:
            if not _HOST_NAME.match(h) or h == SWITCH:
                raise HarnessError(f"bad host name '{h}': [a-z][a-z0-9]{{0,11}}, not '{SWITCH}'")
        self.ip = _ip()
        self.tc = _tool("tc")
        self.nft = _tool("nft")
        net = ipaddress.ip_network(SUBNET)
        self.hosts = list(hosts)
        self.addr = {h: str(net.network_address + 1 + i) for i, h in enumerate(hosts)}
        self.port = {h: f"p{i}" for i, h in enumerate(hosts)}
        self.cuts = set()  # frozenset({a, b})
        self.isolated = set()
        self.loss = {}  # host -> percent
        self.netem_missing = None
        sweep_stale()
        self.run_id, self._lock_fd = _acquire_run_id()
        self.closed = False
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def ns(self, host):
        return f"{NAME_PREFIX}{self.run_id}-{host}"

    def _in(self, host, *argv):
        return _run([self.ip, "-n", self.ns(host)] + list(argv))

    def _build(self):
        # The guard route first: from here on nothing in the root namespace reaches the subnet.
        _run([self.ip, "route", "add", "blackhole", SUBNET, "metric", str(self.run_id)])
        try:
            _run([self.ip, "netns", "add", self.ns(SWITCH)])
        except HarnessError as e:
            raise Unavailable(f"`ip netns add` is not permitted here: {e}") from e
        self._in(SWITCH, "link", "set", "lo", "up")
        self._in(SWITCH, "link", "add", "br0", "type", "bridge")
        self._in(SWITCH, "link", "set", "br0", "up")
        for h in self.hosts:
            _run([self.ip, "netns", "add", self.ns(h)])
            self._in(h, "link", "set", "lo", "up")
            # Created inside the namespaces: no interface of ours ever exists in the root one.
            self._in(SWITCH, "link", "add", self.port[h], "type", "veth",
                     "peer", "name", "eth0", "netns", self.ns(h))
            self._in(SWITCH, "link", "set", self.port[h], "master", "br0", "up")
            self._in(h, "addr", "add", f"{self.addr[h]}/{ipaddress.ip_network(SUBNET).prefixlen}",
                     "dev", "eth0")
            self._in(h, "link", "set", "eth0", "up")
        self._wait_operational(self.hosts)
        self.netem_missing = self._probe_netem()

    def _wait_operational(self, hosts, timeout_s=10.0):
        """Waits until both ends of each host's link are up and its switch port forwards.

        A link set up becomes operational only when the kernel's link watcher
        runs, which it delays by up to a second after a recent change.
        """
        deadline = time.monotonic() + timeout_s
        for h in hosts:
            while True:
                host_end = self._in(h, "-o", "link", "show", "eth0").stdout
                port = self._in(SWITCH, "-d", "-o", "link", "show", self.port[h]).stdout
                if ("state UP" in host_end and "state UP" in port
                        and "bridge_slave state forwarding" in port):
                    break
                if time.monotonic() > deadline:
                    raise HarnessError(f"link of host {h} not up after {timeout_s} s: "
                                       f"{host_end.strip()} / {port.strip()}")
                time.sleep(0.01)

    def _probe_netem(self):
        if self.tc is None:
            return "no `tc` binary (Debian package iproute2)"
        probe = _run([self.tc, "-n", self.ns(SWITCH), "qdisc", "add", "dev", "lo", "root",
                      "netem", "delay", "1us"], check=False)
        if probe.returncode != 0:
            why = probe.stderr.strip()
            if "kind is unknown" in why:
                why += " (a kernel built without CONFIG_NET_SCH_NETEM)"
            return f"no netem qdisc here, so no delay or jitter: tc said: {why}"
        _run([self.tc, "-n", self.ns(SWITCH), "qdisc", "del", "dev", "lo", "root"], check=False)
        return None

    def _host(self, h):
        if h not in self.addr:
            raise HarnessError(f"unknown host '{h}' (hosts: {', '.join(self.hosts)})")
        return h

    # ---------------------------------------------------------------- shaping

    def set_link(self, host, rate_bit=0, delay_us=0, jitter_us=0, loss_pct=0.0):
        """Shapes both directions of `host`'s link; zeros remove that property."""
        self._host(host)
        if rate_bit < 0 or delay_us < 0 or jitter_us < 0 or not 0 <= loss_pct <= 100:
            raise HarnessError("rate, delay and jitter must be >= 0, loss in [0, 100]")
        if (delay_us or jitter_us) and self.netem_missing:
            raise Unavailable(self.netem_missing)
        if self.tc is None and rate_bit:
            raise Unavailable("no `tc` binary (Debian package iproute2)")
        if loss_pct:
            self._need_nft()
        for ns, dev in ((self.ns(host), "eth0"), (self.ns(SWITCH), self.port[host])):
            self._qdisc(ns, dev, rate_bit, delay_us, jitter_us)
        self.loss[host] = loss_pct
        self._apply_filters()

    def _qdisc(self, ns, dev, rate_bit, delay_us, jitter_us):
        if self.tc is None:
            return
        _run([self.tc, "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)
        if delay_us or jitter_us:
            argv = ["netem", "delay", f"{delay_us}us"]
            if jitter_us:
                argv.append(f"{jitter_us}us")
            if rate_bit:
                argv += ["rate", f"{rate_bit}bit"]
            # netem's default queue (1000 packets) is too short for a 25 Gbit/s x 1 ms link.
            argv += ["limit", "100000"]
        elif rate_bit:
            burst = tbf_burst_bytes(rate_bit)  # queue: 5 ms more
            argv = ["tbf", "rate", f"{rate_bit}bit", "burst", str(burst),
                    "limit", str(burst + rate_bit // 8 // 200)]
        else:
            return
        _run([self.tc, "-n", ns, "qdisc", "add", "dev", dev, "root"] + argv)

    # -------------------------------------------------------------- partitions

    def cut(self, a, b):
        if self._host(a) == self._host(b):
            raise HarnessError("cut needs two different hosts")
        self._need_nft()
        self.cuts.add(frozenset((a, b)))
        self._apply_filters()

    def isolate(self, host):
        self._need_nft()
        self.isolated.add(self._host(host))
        self._apply_filters()

    def heal(self, a=None, b=None):
        """Removes the cut between a and b, or every cut and isolation."""
        if a is None:
            self.cuts.clear()
            self.isolated.clear()
        elif b is None:
            self.isolated.discard(self._host(a))
            self.cuts = {c for c in self.cuts if a not in c}
        else:
            self.cuts.discard(frozenset((self._host(a), self._host(b))))
        self._apply_filters()

    def link(self, host, up):
        self._in(self._host(host), "link", "set", "eth0", "up" if up else "down")
        if up:
            self._wait_operational([host])

    def _need_nft(self):
        if self.nft is None:
            raise Unavailable("no `nft` binary for partitions and loss (Debian package "
                              "nftables; .ci/install_deps.sh installs it)")

    def _apply_filters(self):
        """Replaces the switch's drop rules with the current cuts, isolations and losses (atomic)."""
        if self.nft is None:
            return
        chains = []
        for h in self.hosts:
            port = self.port[h]
            up, down = [], []  # rules for frames from / to host h
            if h in self.isolated:
                up.append("drop")
                down.append("drop")
            peers = sorted(self.addr[p] for c in self.cuts if h in c for p in c if p != h)
            if peers:
                up.append(f"ip daddr {{ {', '.join(peers)} }} drop")
            if self.loss.get(h):
                below = round(self.loss[h] * 10000)  # per million
                up.append(f"numgen random mod 1000000 < {below} drop")
                down.append(f"numgen random mod 1000000 < {below} drop")
            for name, hook, rules in (("up", "ingress", up), ("down", "egress", down)):
                if rules:
                    body = "".join(f"    {r}\n" for r in rules)
                    chains.append(f"  chain {name}_{port} {{\n    type filter hook {hook} "
                                  f"device \"{port}\" priority 0; policy accept;\n{body}  }}\n")
        # "table ...; delete table ...": a delete that cannot fail, in the same transaction.
        script = "table netdev ps\ndelete table netdev ps\n"
        if chains:
            script += "table netdev ps {\n" + "".join(chains) + "}\n"
        _run([self.ip, "netns", "exec", self.ns(SWITCH), self.nft, "-f", "-"], input_text=script)

    # ----------------------------------------------------------------- close

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            _remove_run(self.run_id)
        finally:
            os.unlink(_lock_path(self.run_id))
            os.close(self._lock_fd)


# ------------------------------------------------------------ owner process

def _reply(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _parse_kv(args):
    out = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep:
            raise HarnessError(f"expected key=value, got '{arg}'")
        out[key] = value
    return out


def _handle(topo, words):
    verb, args = words[0], words[1:]
    if verb == "link" and args:
        kv = _parse_kv(args[1:])
        unknown = set(kv) - {"rate_bit", "delay_us", "jitter_us", "loss_pct"}
        if unknown:
            raise HarnessError(f"unknown link settings {sorted(unknown)}")
        topo.set_link(args[0], rate_bit=int(kv.get("rate_bit", 0)),
                      delay_us=int(kv.get("delay_us", 0)), jitter_us=int(kv.get("jitter_us", 0)),
                      loss_pct=float(kv.get("loss_pct", 0)))
    elif verb == "cut" and len(args) == 2:
        topo.cut(*args)
    elif verb == "isolate" and len(args) == 1:
        topo.isolate(args[0])
    elif verb == "heal" and len(args) <= 2:
        topo.heal(*args)
    elif verb in ("down", "up") and len(args) == 1:
        topo.link(args[0], up=(verb == "up"))
    else:
        raise HarnessError(f"unknown command '{' '.join(words)}' (link HOST [rate_bit=N] "
                           "[delay_us=N] [jitter_us=N] [loss_pct=F] | cut A B | isolate A | "
                           "heal [A [B]] | down A | up A)")


class _LineReader:
    """Lines from a pipe with a timeout (select() on a buffered file object would miss lines)."""

    def __init__(self, fd):
        self._fd = fd
        self._buf = b""
        self.eof = False

    def readline(self, timeout_s):
        """The next line without its newline; None at EOF or after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if self.eof or left <= 0 or not select.select([self._fd], [], [], left)[0]:
                return None
            chunk = os.read(self._fd, 65536)
            self.eof = not chunk
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()


def _commands(fd, parent):
    """Command lines from `fd` until EOF, or until the process that started us is gone."""
    reader = _LineReader(fd)
    while not reader.eof and os.getppid() == parent:
        line = reader.readline(0.5)
        if line is not None:
            yield line


def _on_signal(signum, frame):
    # Once: a second signal must not interrupt the clean-up the first one started.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def serve(hosts):
    """Builds the network, answers commands on stdin, removes everything when stdin closes.

    Output: "subnet S", "switch NETNS", "ip PATH_OF_IP", then "host NAME NETNS IP" per host, "netem 1" or "netem 0 REASON",
    and "ready RUN_ID"; or one line "unavailable REASON" / "error MESSAGE" and exit code 3 / 1.
    Each command gets "ok", "unavailable REASON" (a missing feature) or "error MESSAGE".
    """
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        topo = _Topology(hosts)
    except Unavailable as e:
        _reply(f"unavailable {e}")
        return 3
    except HarnessError as e:
        _reply(f"error {e}")
        return 1
    try:
        _reply(f"subnet {SUBNET}")
        _reply(f"switch {topo.ns(SWITCH)}")
        _reply(f"ip {topo.ip}")
        for h in topo.hosts:
            _reply(f"host {h} {topo.ns(h)} {topo.addr[h]}")
        _reply("netem 1" if topo.netem_missing is None else f"netem 0 {topo.netem_missing}")
        _reply(f"ready {topo.run_id}")
        for line in _commands(sys.stdin.fileno(), parent):
            words = line.split()
            if not words:
                continue
            try:
                _handle(topo, words)
                _reply("ok")
            except Unavailable as e:
                _reply(f"unavailable {e}")
            except (HarnessError, ValueError) as e:
                _reply(f"error {e}")
    except BrokenPipeError:
        pass  # the test is gone
    finally:
        topo.close()
    return 0


# ------------------------------------------------------ Python tests' API

class Network:
    """A test network for a Python test: `with Network(["a", "b"]) as net: ...`.

    Raises Unavailable when namespaces are not permitted here (tests skip with
    the message). Not thread-safe. Processes started with popen() are killed
    when the network closes, at the latest.
    """

    def __init__(self, hosts, timeout_s=60):
        self._proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "serve"] + list(hosts),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            start_new_session=True)  # a signal to the test's process group must not stop it first
        self._reader = _LineReader(self._proc.stdout.fileno())
        self.owner_pid = self._proc.pid  # the process that owns (and removes) the network
        self.hosts = {}
        self.subnet = None
        self.switch_netns = None
        self.ip_binary = None
        self.netem_missing = None
        self.run_id = None
        try:
            while self.run_id is None:
                line = self._read_line(timeout_s)
                kind, _, rest = line.partition(" ")
                if kind == "subnet":
                    self.subnet = rest
                elif kind == "switch":
                    self.switch_netns = rest
                elif kind == "ip":
                    self.ip_binary = rest
                elif kind == "host":
                    name, ns, addr = rest.split()
                    self.hosts[name] = (ns, addr)
                elif kind == "netem":
                    self.netem_missing = None if rest == "1" else rest[2:]
                elif kind == "ready":
                    self.run_id = int(rest)
                elif kind == "unavailable":
                    raise Unavailable(rest)
                else:
                    raise HarnessError(f"netns.py serve: {line}")
        except BaseException:
            self.close()
            raise

    def _read_line(self, timeout_s):
        line = self._reader.readline(timeout_s)
        if line is None:
            raise HarnessError(f"netns.py serve gave no answer (exit code {self._proc.poll()})")
        return line

    def _command(self, *words, timeout_s=60):
        self._proc.stdin.write((" ".join(str(w) for w in words) + "\n").encode())
        self._proc.stdin.flush()
        reply = self._read_line(timeout_s)
        kind, _, rest = reply.partition(" ")
        if kind == "unavailable":
            raise Unavailable(rest)
        if kind != "ok":
            raise HarnessError(rest or reply)

    def addr(self, host):
        return self.hosts[host][1]

    def netns(self, host):
        return self.hosts[host][0]

    def exec_argv(self, host, argv):
        """`argv` run inside `host`'s namespace."""
        return [self.ip_binary, "netns", "exec", self.netns(host)] + list(argv)

    def popen(self, host, argv, **kwargs):
        return subprocess.Popen(self.exec_argv(host, argv), **kwargs)

    def run(self, host, argv, **kwargs):
        return subprocess.run(self.exec_argv(host, argv), **kwargs)

    def set_link(self, host, rate_bit=0, delay_us=0, jitter_us=0, loss_pct=0.0):
        """Shapes both directions of `host`'s link (each call replaces the last)."""
        self._command("link", host, f"rate_bit={int(rate_bit)}", f"delay_us={int(delay_us)}",
                      f"jitter_us={int(jitter_us)}", f"loss_pct={loss_pct}")

    def shaper_drops(self):
        """Packets the links' shapers dropped (their queue was full), summed
        over every link and both directions, since each link was last set."""
        tc = _tool("tc")
        if tc is None:
            raise Unavailable("no `tc` binary (Debian package iproute2)")
        total = 0
        for ns in [self.switch_netns] + [ns for ns, _ in self.hosts.values()]:
            out = _run([tc, "-n", ns, "-s", "qdisc", "show"]).stdout
            total += sum(int(n) for n in re.findall(r"dropped (\d+)", out))
        return total

    def cut(self, a, b):
        """Silently drops every packet between a and b, both ways."""
        self._command("cut", a, b)

    def isolate(self, host):
        """Silently drops every frame to and from `host`."""
        self._command("isolate", host)

    def heal(self, a=None, b=None):
        """Undoes cut(a, b); with one host every cut of it and its isolation; with none, all."""
        self._command("heal", *[h for h in (a, b) if h is not None])

    def link_down(self, host):
        """Sets `host`'s eth0 down inside its namespace (its own sends fail at once)."""
        self._command("down", host)

    def link_up(self, host):
        self._command("up", host)

    def close(self, timeout_s=30):
        """Removes everything (the owner process does it when its stdin closes)."""
        if self._proc.stdin and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(argv):
    if len(argv) >= 1 and argv[0] == "serve":
        return serve(argv[1:])
    if argv == ["sweep"]:
        print("swept runs:", sweep_stale() or "none")
        return 0
    if argv == ["probe"]:
        if unavailable_reason():
            print(f"unavailable: {unavailable_reason()}")
            return 3
        try:
            with Network(["a"]) as net:
                print("ok" + (f" (no delay: {net.netem_missing})" if net.netem_missing else ""))
            return 0
        except Unavailable as e:
            print(f"unavailable: {e}")
            return 3
    print("usage: netns.py serve HOST... | sweep | probe", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
