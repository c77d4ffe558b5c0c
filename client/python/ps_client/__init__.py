"""Python client of the ps parameter-server cluster.

A thin package over the C++ client SDK (``client/client.h``)::

    import numpy as np
    import ps_client

    with ps_client.connect("cluster.yaml", worker_index=0) as client:
        w = client.get_table("weights")
        params = client.pull_dense(w).wait()          # numpy float32
        client.push_dense(w, np.ones(w.size, np.float32)).wait()
        client.clock()                                # ends the step

Submodules: :mod:`ps_client.nn` (PyTorch: an EmbeddingBag over a sparse
table, dense parameter sync for a ``torch.nn.Module``), :mod:`ps_client.worker`
(the worker-command contract of ``ps_launch`` and its progress lines),
:mod:`ps_client.testing` (a local cluster of ``ps_server`` processes).

Importing the package turns off Abseil's debug mutex deadlock detection for
the process (see :func:`disable_mutex_deadlock_detection`).
"""

from ps_client._core import (
    ClientConfig,
    ClusterConfig,
    Future,
    ShardStats,
    TableConfig,
    TableInfo,
    TlsConfig,
    disable_mutex_deadlock_detection,
    load_cluster_config,
    parse_cluster_config,
    tune_allocator_for_large_messages,
)
from ps_client.client import Client, connect
from ps_client.errors import (
    Aborted,
    AlreadyExists,
    Cancelled,
    DataLoss,
    DeadlineExceeded,
    Evicted,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotAMember,
    NotFound,
    OutOfRange,
    PermissionDenied,
    PsError,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)

__version__ = "0.1.0"

# As ps_worker does at start: Debian's Abseil keeps its debug lock graph on,
# which every mutex operation of the client pays for (about 1,000 of the
# 14,000 instructions of a 4 KiB pull's send under callgrind;
# common/process_tuning.h). No client exists yet at import.
disable_mutex_deadlock_detection()
