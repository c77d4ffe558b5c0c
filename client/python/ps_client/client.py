"""The Python client: :func:`connect` and :class:`Client`.

A thin layer over the C++ SDK (``ps_client._core``, ``client/client.h``):
it resolves table names, allocates result arrays when no ``out=`` is given
and builds table schemas; every request runs in C++.
"""

import atexit
import json
import operator
import os
import weakref

import numpy as np

from ps_client import _core

__all__ = ["Client", "connect"]

# Keys accepted by connect(**client_options): the `client:` section of a
# cluster config (common/config.h documents each and its default).
_CLIENT_OPTION_KEYS = frozenset(
    name for name in dir(_core.ClientConfig) if not name.startswith("_"))
_TLS_KEYS = frozenset(("cert_file", "key_file", "ca_file",
                       "server_name_override"))


# Clients still open when the interpreter exits are closed by atexit, while
# threads may still take the GIL: closing fails their pending requests
# (Cancelled) and runs the callbacks of those now, not during finalization.
_open_clients = weakref.WeakSet()


@atexit.register
def _close_open_clients():
    for client in list(_open_clients):
        client.close()


def connect(config=None, *, worker_index=-1, servers=None, tls=None,
            auth_token=None, **client_options):
    """Connects to a cluster and returns a :class:`Client`.

    Either from a cluster config (the same YAML file every process of the
    cluster reads)::

        client = ps_client.connect("cluster.yaml", worker_index=0)

    or from server addresses, adopting the tables the servers hold::

        client = ps_client.connect(servers=["10.0.0.1:50051", "10.0.0.2:50051"],
                                   tls={"ca_file": "ca.pem"}, auth_token="s3cret")

    Args:
        config: a config file path, or a :class:`ClusterConfig` from
            :func:`load_cluster_config` (its ``servers`` may be reassigned).
        worker_index: this worker's index in ``[0, num_workers)``, or -1 for
            a client that is not a worker (it may only push to async tables
            and never calls :meth:`Client.clock` / :meth:`Client.barrier`).
        servers: ``"host:port"`` per shard, in shard order (instead of
            ``config``).
        tls: a :class:`TlsConfig`, or a dict with any of ``ca_file``,
            ``cert_file``, ``key_file`` (PEM paths; the last two for mutual
            TLS) and ``server_name_override``; either turns TLS on.
            Overrides the config's ``tls:``.
        auth_token: bearer token sent with every request (overrides the
            config's ``auth_token``).
        **client_options: fields of the ``client:`` section, e.g.
            ``rpc_timeout_ms=5000``, ``max_reconnect_attempts=3``,
            ``chunk_bytes=1 << 20`` (override the config's).

    Connecting blocks up to ``rpc_timeout_ms`` for servers that are still
    starting. Raises :class:`Unavailable` when a server cannot be reached,
    :class:`FailedPrecondition` when the servers' tables or partitioning
    differ from the config's, :class:`InvalidArgument` /
    :class:`NotFound` for a bad or missing config file.
    """
    if (config is None) == (servers is None):
        raise TypeError("connect() takes a config or servers=, not both")
    unknown = set(client_options) - _CLIENT_OPTION_KEYS
    if unknown:
        raise TypeError(f"unknown client options {sorted(unknown)}; "
                        f"allowed: {sorted(_CLIENT_OPTION_KEYS)}")
    if config is not None:
        if not isinstance(config, _core.ClusterConfig):
            config = _core.load_cluster_config(os.fspath(config))
        client_config, tls_config = config.client, config.tls
        token = config.auth_token
    else:
        client_config, tls_config, token = (_core.ClientConfig(),
                                            _core.TlsConfig(), "")
    for key, value in client_options.items():
        setattr(client_config, key, value)
    if tls is not None:
        tls_config = _tls_config(tls)
    if auth_token is not None:
        token = auth_token
    if config is not None:
        config.client, config.tls, config.auth_token = (client_config,
                                                        tls_config, token)
        return Client(_core.Client.from_config(config, worker_index))
    return Client(_core.Client.connect(list(servers), worker_index,
                                       client_config, tls_config, token))


def _tls_config(tls):
    if isinstance(tls, _core.TlsConfig):
        return tls
    unknown = set(tls) - _TLS_KEYS
    if unknown:
        raise TypeError(f"unknown tls keys {sorted(unknown)}; "
                        f"allowed: {sorted(_TLS_KEYS)}")
    config = _core.TlsConfig()
    config.enabled = True
    for key, value in tls.items():
        setattr(config, key, os.fspath(value))
    return config


def _keys_array(keys):
    """Lists of ids become a uint64 array; buffers pass through unchanged."""
    if isinstance(keys, (list, tuple, range)):
        return np.asarray(keys, dtype=np.uint64)
    return keys


class Client:
    """A connection to every server of a cluster (thread-safe).

    Tables may be given by :class:`TableInfo`, table id or name. Data calls
    return a :class:`Future` at once; ``future.wait()`` returns the result
    (a pull's output array) or raises the status family's exception.

    Buffers: float32 values and uint64 (or int64) ids, C-contiguous, as
    numpy arrays or torch CPU tensors (any object with the buffer protocol).
    They pass without copies: a pull writes straight into ``out``; a push
    reads the gradients once, before the call returns (``zero_copy=True``:
    while the request is in flight, so do not modify them before the
    future completes). When ``out`` is omitted a numpy float32 array is
    allocated and returned by ``wait()``; the Future keeps ``out`` alive
    until the request completes, even when the Future itself is dropped.

    Clock and barrier belong to a worker as a whole: call them from one
    thread.
    """

    def __init__(self, core):
        self._c = core
        self._by_name = {}
        self._by_id = {}
        _open_clients.add(self)

    # -- lifetime -----------------------------------------------------------

    def close(self):
        """Stops the heartbeat (a worker leaves) and closes the connections;
        requests still in flight fail with :class:`Cancelled`. Clients left
        open are closed when the interpreter exits."""
        _open_clients.discard(self)
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def num_servers(self):
        """Number of shards (servers)."""
        return self._c.num_servers

    @property
    def worker_index(self):
        """This client's worker index, or -1."""
        return self._c.worker_index

    # -- tables -------------------------------------------------------------

    def get_table(self, name):
        """The :class:`TableInfo` of table ``name``; :class:`NotFound`."""
        info = self._by_name.get(name)
        if info is None:
            info = self._remember(self._c.get_table(name))
        return info

    def list_tables(self):
        """Every table the client knows, by id (refreshed by get_table /
        create_table)."""
        return [self._remember(info) for info in self._c.list_tables()]

    def table(self, table):
        """The :class:`TableInfo` for a TableInfo, table id or name;
        :class:`NotFound` when no table known to the client has it."""
        if isinstance(table, _core.TableInfo):
            return table
        if isinstance(table, str):
            return self.get_table(table)
        info = self._by_id.get(operator.index(table))
        if info is None:
            info = self._remember(self._c.table_info(table))
        return info

    def create_table(self, name, kind="dense", *, size=None, dim=None,
                     consistency="async", staleness=None, optimizer=None,
                     initializer=None):
        """Creates a table on every shard and returns its :class:`TableInfo`.

        The arguments are the keys of a table entry in the cluster YAML
        (``tables:``; see deploy/examples/local_2x2.yaml) and are validated
        by the same parser, e.g.::

            client.create_table("emb", "sparse", dim=16,
                                optimizer={"type": "adagrad",
                                           "learning_rate": 0.05},
                                initializer={"type": "normal",
                                             "stddev": 0.01})

        Raises :class:`InvalidArgument` for a bad schema (naming the key),
        :class:`AlreadyExists` when the name is in use.
        """
        entry = {"name": name, "kind": kind, "consistency": consistency}
        for key, value in (("size", size), ("dim", dim),
                           ("staleness", staleness), ("optimizer", optimizer),
                           ("initializer", initializer)):
            if value is not None:
                entry[key] = value
        # JSON is YAML: the config parser validates the entry as it would
        # in a cluster file (the `cluster:` section is a placeholder).
        document = {"cluster": {"servers": ["create-table:1"],
                                "num_workers": 1},
                    "tables": [entry]}
        spec = _core.parse_cluster_config(
            json.dumps(document, indent=1),
            f"create_table({name!r})").tables[0]
        return self._remember(self._c.create_table(spec))

    def _remember(self, info):
        self._by_name[info.name] = info
        self._by_id[info.table_id] = info
        return info

    # -- dense --------------------------------------------------------------

    def pull_dense(self, table, *, offset=0, count=None, out=None):
        """Pulls elements ``[offset, offset + n)`` of a dense table into
        ``out`` (n = its size), or into a new float32 array of ``count``
        elements (default: to the end of the table). Waits as the table's
        consistency requires (sync: until the previous step is applied).
        Returns a Future whose ``wait()`` returns the array. A negative
        offset, or one past the end without ``count`` or ``out``, raises
        OutOfRange at once; other ranges are checked by the server."""
        # The binding checks the offset and allocates the result: each
        # Python-level step adds latency to small pulls.
        return self._c.pull_dense(table, offset, out, count)

    def push_dense(self, table, grads, *, offset=0, zero_copy=False):
        """Pushes gradients for elements ``[offset, offset + len(grads))``;
        the server's optimizer applies them as the table's consistency
        says. ``zero_copy``: send from ``grads`` itself (keep it unchanged
        until the future completes)."""
        return self._c.push_dense(table, offset, grads, zero_copy)

    def push_pull_dense(self, table, grads, *, offset=0, out=None,
                        zero_copy=False):
        """Pushes ``grads``, then pulls the same range after the update into
        ``out`` (or a new array); one round trip."""
        if out is None:
            out = np.empty(np.shape(grads), dtype=np.float32)
        return self._c.push_pull_dense(table, offset, grads, out, zero_copy)

    # -- sparse -------------------------------------------------------------

    def pull_sparse(self, table, keys, *, out=None):
        """Pulls the rows of ``keys`` (any order and shape, duplicates
        allowed; rows are created on first pull by the table's initializer)
        into ``out`` of ``keys.size * dim`` floats, or a new array of shape
        ``keys.shape + (dim,)``."""
        # out None: the binding allocates the rows (see pull_dense).
        return self._c.pull_sparse(table, _keys_array(keys), out)

    def push_sparse(self, table, keys, grads):
        """Pushes one gradient row per key (``keys.size * dim`` floats);
        the rows of a repeated key are summed first."""
        return self._c.push_sparse(table, _keys_array(keys), grads)

    def push_pull_sparse(self, table, keys, grads, *, out=None):
        """push_sparse, then the rows after the update (one round trip)."""
        return self._c.push_pull_sparse(table, _keys_array(keys), grads, out)

    # -- worker -------------------------------------------------------------

    def clock(self):
        """Worker only: waits until every push this client issued is
        acknowledged, then advances the worker's clock on every server and
        returns it. In sync tables this ends the step; in ssp tables it lets
        slower readers on."""
        return self._c.clock()

    @property
    def current_clock(self):
        """The worker's clock (0 at start, or the step it joined at)."""
        return self._c.current_clock

    @property
    def job_start_clock(self):
        """The clock at which the servers' current job began (0 for the
        first job of fresh servers)."""
        return self._c.job_start_clock

    @property
    def job_step(self):
        """Worker: this worker's step in the job, ``current_clock -
        job_start_clock``: 0 at the start, the job's step for a worker that
        (re)joined a running job."""
        return self.current_clock - self.job_start_clock

    def barrier(self):
        """Worker only: blocks until every live worker reached it."""
        self._c.barrier()

    def rejoin(self):
        """Worker only: after :class:`ps_client.Evicted`, registers again
        and moves this worker's clock to the step the job is at (the same on
        every server); returns that clock. The step it was in is dropped
        (what it pushed there counts)."""
        return self._c.rejoin()

    def leave(self):
        """Worker only: leaves the job (a clean exit; :meth:`close` does
        it): the servers stop waiting for this worker at once."""
        self._c.leave()

    def stats(self):
        """Per-shard statistics (list of :class:`ShardStats`)."""
        return self._c.stats()

    def checkpoint(self):
        """Asks every shard to write a checkpoint now; returns the files in
        shard order. :class:`FailedPrecondition` when a server has no
        ``server.checkpoint_dir``."""
        return self._c.checkpoint()
