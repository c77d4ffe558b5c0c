"""What the CTR job reports about the servers: rows and table memory per
shard from the servers' GetStats (``client.stats()``), and each server
process's memory from /proc.

Table memory: GetStats' ``memory_bytes`` (what the shard charges its memory
cap with: rows x the documented bytes-per-row formula, README "Embedding
tables") and ``bytes_per_row`` (that formula for the table).

Heap: GetStats' ``heap_allocated_bytes`` (the server process's malloc heap
in use) and ``heap_free_bytes`` (freed but kept by the allocator), which
tell the memory the server uses from what glibc holds on to.

Process memory: the resident set size (VmRSS) and its peak (VmHWM) from
/proc/<pid>/status of the server process, found as the owner of the socket
listening on the shard's port. That works when the servers run on this host
(ps_launch, tests); for a remote server it is unknown (None) and reported
as absent. RSS counts what the formula leaves out (array growth ahead of
use, allocator slack, checkpoint copies, gRPC buffers).

Rows: ``num_rows``, ``rows_admitted``, ``rows_evicted`` and
``ids_pending`` (ids counted by the admission filter, no row yet) per shard
(ROW_COUNTERS).
"""

import os

__all__ = ["ROW_COUNTERS", "table_rows", "table_memory", "heap_memory",
           "listening_pid", "process_memory", "shard_memory"]

# Row counters of a sparse table's stats, as the servers report them
# (ShardStats.Table attributes); absent ones are skipped.
ROW_COUNTERS = ("num_rows", "rows_admitted", "rows_evicted", "ids_pending")

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0")


def table_rows(stats, table):
    """{counter: [value per shard]} of ``table`` for the counters in
    ROW_COUNTERS that the servers report. ``stats`` is client.stats()."""
    rows = {}
    for counter in ROW_COUNTERS:
        values = []
        for shard in stats:
            t = next((t for t in shard.tables if t.name == table), None)
            if t is None or not hasattr(t, counter):
                break
            values.append(int(getattr(t, counter)))
        else:
            rows[counter] = values
    return rows


def table_memory(stats, table):
    """{"memory_bytes": [per shard], "bytes_per_row": [per shard]} of
    ``table`` from the servers' GetStats (``client.stats()``)."""
    shards = [next(t for t in shard.tables if t.name == table)
              for shard in stats]
    return {"memory_bytes": [int(t.memory_bytes) for t in shards],
            "bytes_per_row": [int(t.bytes_per_row) for t in shards]}


def heap_memory(stats):
    """{"allocated": [per shard], "free": [per shard]} bytes of each server
    process's malloc heap from GetStats (``client.stats()``); None when the
    servers cannot tell (0: another libc)."""
    allocated = [int(s.heap_allocated_bytes) for s in stats]
    if not all(allocated):
        return None
    return {"allocated": allocated,
            "free": [int(s.heap_free_bytes) for s in stats]}


def _listening_inodes(port):
    """Inodes of sockets in LISTEN state on ``port`` (IPv4 and IPv6)."""
    inodes = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)  # header
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1],
                                             16) == port:
                        inodes.add(inode)
        except OSError:
            continue
    return inodes


def listening_pid(address):
    """Pid of the local process listening on ``address`` ("host:port"), or
    None (a remote host, or no such process visible to us)."""
    host, _, port = address.rpartition(":")
    if host not in _LOCAL_HOSTS or not port.isdigit():
        return None
    targets = {f"socket:[{i}]" for i in _listening_inodes(int(port))}
    if not targets:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        fd_dir = f"/proc/{pid}/fd"
        try:
            for fd in os.listdir(fd_dir):
                if os.readlink(os.path.join(fd_dir, fd)) in targets:
                    return int(pid)
        except OSError:  # gone, or not ours to read
            continue
    return None


def process_memory(pid):
    """{"rss": bytes, "hwm": bytes} of process ``pid`` from
    /proc/<pid>/status, or None when it cannot be read."""
    memory = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    memory[key[2:].lower()] = int(value.split()[0]) * 1024
    except OSError:
        return None
    return memory if len(memory) == 2 else None


def shard_memory(addresses):
    """[process_memory of the server at each address, or None]."""
    result = []
    for address in addresses:
        pid = listening_pid(address)
        result.append(process_memory(pid) if pid is not None else None)
    return result
