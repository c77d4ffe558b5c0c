"""TLS, mutual TLS and the bearer token from Python: connect() passes the
certificate files and the token to the C++ SDK."""

import os
import subprocess

import numpy as np
import pytest

import ps_client

MAKE_CERTS = os.path.join(os.environ["TEST_SRCDIR"], "ps", "tests",
                          "security", "make_certs.sh")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    path = tmp_path_factory.mktemp("certs")
    subprocess.run(["bash", MAKE_CERTS, str(path)], check=True)
    return path


def test_mutual_tls_with_token(make_cluster, certs):
    cluster = make_cluster(
        "tables:\n  - {name: w, kind: dense, size: 4}\n"
        f'tls:\n  enabled: true\n  cert_file: "{certs}/server.pem"\n'
        f'  key_file: "{certs}/server.key"\n  ca_file: "{certs}/ca.pem"\n'
        "  require_client_cert: true\n"
        'auth_token: "s3cret"\n', num_servers=2)
    tls = {"ca_file": certs / "ca.pem", "cert_file": certs / "client.pem",
           "key_file": certs / "client.key"}
    with ps_client.connect(servers=cluster.addresses, tls=tls,
                           auth_token="s3cret") as client:
        client.push_dense("w", np.ones(4, np.float32)).wait()
    # The config's own tls: section and token work as they are.
    with ps_client.connect(cluster.client_config_path) as client:
        assert client.pull_dense("w").wait().shape == (4,)
    # No client certificate: the handshake fails (UNAVAILABLE names it).
    with pytest.raises(ps_client.Unavailable):
        ps_client.connect(servers=cluster.addresses,
                          tls={"ca_file": certs / "ca.pem"},
                          auth_token="s3cret", rpc_timeout_ms=1000)
    # A good certificate but the wrong token: the server's UNAUTHENTICATED.
    with pytest.raises(ps_client.Unauthenticated, match="invalid bearer "
                       "token"):
        ps_client.connect(servers=cluster.addresses, tls=tls,
                          auth_token="wrong")
