"""Fixtures: real ps_server clusters (ps_client.testing.LocalCluster)."""

import pytest

from ps_client.testing import LocalCluster

# Tables of the default test cluster. SGD with learning rate 1 on zeros: a
# pushed gradient g reads back as -g (sums exact in float32 for small ints).
TABLES = """
tables:
  - name: w
    kind: dense
    size: 10
    consistency: async
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: e
    kind: sparse
    dim: 4
    consistency: async
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: s
    kind: dense
    size: 8
    consistency: sync
    optimizer: {type: sgd, learning_rate: 1.0}
"""


@pytest.fixture
def make_cluster():
    """make_cluster(body_yaml, **kw) -> a started LocalCluster, stopped at
    the end of the test."""
    clusters = []

    def make(body_yaml=TABLES, **kwargs):
        cluster = LocalCluster(body_yaml, **kwargs)
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.stop()


@pytest.fixture
def cluster(make_cluster):
    """2 servers, 2 workers, the TABLES above."""
    return make_cluster(num_servers=2, num_workers=2)
