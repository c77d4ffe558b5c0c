// Transport security with real handshakes: TLS, mutual TLS, server name
// override and the bearer token, against ps_server processes started from a
// cluster config with a `tls:` section. Certificates are made at test time
// by make_certs.sh (openssl): a CA, server and client certificates, and a
// second CA nobody trusts.
//
// What a refused client sees: a TLS handshake failure never reaches the
// server's code, so gRPC reports it as UNAVAILABLE, and the SDK's Connect()
// (which waits client.rpc_timeout_ms for a server that may still be
// starting) returns UNAVAILABLE. A bad bearer token passes the handshake and
// is refused by the server with exactly UNAUTHENTICATED. In every refused
// case the test checks that no table was touched.
#include <stdlib.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "common/bytes.h"
#include "common/file_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

constexpr char kToken[] = "s3cret-token";

std::string CertDir() {
  static const std::string* dir = [] {
    const char* tmp = getenv("TEST_TMPDIR");
    auto* d = new std::string(absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                           "/ps_tls_certs"));
    const std::string cmd = absl::StrCat(
        "bash ", RunfilePath("tests/security/make_certs.sh"), " ", *d);
    if (system(cmd.c_str()) != 0) {
      ADD_FAILURE() << "make_certs.sh failed: " << cmd;
    }
    return d;
  }();
  return *dir;
}

std::string Cert(const std::string& name) {
  return absl::StrCat(CertDir(), "/", name);
}

// Cluster YAML body: two tables and a `tls:` section.
std::string Body(const std::string& server_cert, bool require_client_cert,
                 const std::string& token) {
  std::string yaml = absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: 8
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 2
    optimizer: {type: sgd, learning_rate: 1.0}
tls:
  enabled: true
  cert_file: ")", Cert(server_cert + ".pem"), R"("
  key_file: ")", Cert(server_cert + ".key"), R"("
  ca_file: ")", Cert("ca.pem"), R"("
  require_client_cert: )", require_client_cert ? "true" : "false", "\n");
  if (!token.empty()) absl::StrAppend(&yaml, "auth_token: \"", token, "\"\n");
  return yaml;
}

class TlsTest : public ::testing::Test {
 protected:
  void StartCluster(const std::string& server_cert, bool require_client_cert,
                    const std::string& token = "") {
    ClusterSpec spec;
    spec.num_servers = 2;
    spec.body_yaml = Body(server_cert, require_client_cert, token);
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
  }

  // Options of a client that is not a worker, with its own TLS settings.
  ClientOptions Options(const std::string& ca, const std::string& cert,
                        const std::string& token = "") {
    ClientOptions options = cluster_->MakeClientOptions(-1);
    options.tls = TlsConfig();
    options.tls.enabled = true;
    if (!ca.empty()) options.tls.ca_file = Cert(ca + ".pem");
    if (!cert.empty()) {
      options.tls.cert_file = Cert(cert + ".pem");
      options.tls.key_file = Cert(cert + ".key");
    }
    options.auth_token = token;
    // Refused handshakes are retried until this deadline.
    options.client.rpc_timeout_ms = 1500;
    options.client.max_reconnect_attempts = 2;
    options.client.reconnect_initial_backoff_ms = 50;
    options.client.reconnect_max_backoff_ms = 100;
    return options;
  }

  // Pushes +1 to every element of `w` and to ids 1..4 of `emb` twice, pulls
  // and checks the exact result (SGD, lr 1, zero initialization).
  void ExpectPushPullWorks(Client* client) {
    const std::vector<float> ones(8, 1.0f);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(client->PushDense(0, 0, ones).Wait().ok());
    }
    std::vector<float> w(8);
    ASSERT_TRUE(client->PullDense(0, 0, absl::MakeSpan(w)).Wait().ok());
    EXPECT_EQ(w, std::vector<float>(8, -2.0f));
    const std::vector<uint64_t> keys = {1, 2, 3, 4};
    const std::vector<float> grads(8, 1.0f);
    std::vector<float> rows(8);
    ASSERT_TRUE(client->PushPullSparse(1, keys, grads, absl::MakeSpan(rows))
                    .Wait()
                    .ok());
    EXPECT_EQ(rows, std::vector<float>(8, -1.0f));
  }

  // Connects with `options` and checks the data path end to end.
  void ExpectConnectsAndWorks(const ClientOptions& options) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    ExpectPushPullWorks(client->get());
  }

  // Connect with `options` fails with `code`; the message is logged (the test
  // log shows what a refused client is told).
  void ExpectRefused(const ClientOptions& options,
                     absl::StatusCode code = absl::StatusCode::kUnavailable) {
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    EXPECT_EQ(client.status().code(), code) << client.status();
    std::cout << "refused: " << client.status() << std::endl;
  }

  // The content of the test certificate file `name` ("" after a failure).
  std::string Pem(const std::string& name) {
    absl::StatusOr<std::string> pem = ReadFileToString(Cert(name), name);
    EXPECT_TRUE(pem.ok()) << pem.status();
    return pem.ok() ? *pem : std::string();
  }

  // Every table on every shard is as created: no push, no pull, version 0.
  void ExpectUntouched() {
    absl::StatusOr<std::unique_ptr<Client>> good =
        Client::Connect(Options("ca", "client", token_));
    ASSERT_TRUE(good.ok()) << good.status();
    absl::StatusOr<std::vector<ShardStats>> stats = (*good)->GetStats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    ASSERT_EQ(stats->size(), 2u);
    for (const ShardStats& shard : *stats) {
      ASSERT_EQ(shard.tables.size(), 2u);
      for (const ShardStats::Table& t : shard.tables) {
        EXPECT_EQ(t.pushes, 0u) << t.name;
        EXPECT_EQ(t.pulls, 0u) << t.name;
        EXPECT_EQ(t.version, 0u) << t.name;
        EXPECT_EQ(t.num_rows, 0u) << t.name;
      }
    }
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::string token_;
};

TEST_F(TlsTest, ServerTlsPushPullEndToEnd) {
  StartCluster("server", /*require_client_cert=*/false);
  ExpectConnectsAndWorks(Options("ca", ""));
}

TEST_F(TlsTest, ClientWithConfigFileSettingsConnects) {
  // The cluster config's own tls section (server cert presented by the
  // client too) is what ps_worker uses.
  StartCluster("server", /*require_client_cert=*/true);
  absl::StatusOr<std::unique_ptr<Client>> client = cluster_->Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  ExpectPushPullWorks(client->get());
}

TEST_F(TlsTest, PlaintextClientIsRefusedByTlsServer) {
  StartCluster("server", /*require_client_cert=*/false);
  ClientOptions options = Options("", "");
  options.tls.enabled = false;
  ExpectRefused(options);
  ExpectUntouched();
}

TEST_F(TlsTest, ClientTrustingTheWrongCaIsRefused) {
  StartCluster("server", /*require_client_cert=*/false);
  ExpectRefused(Options("rogue_ca", ""));
  ExpectUntouched();
}

TEST_F(TlsTest, MutualTlsGoodClientWorks) {
  StartCluster("server", /*require_client_cert=*/true);
  ExpectConnectsAndWorks(Options("ca", "client"));
}

TEST_F(TlsTest, MutualTlsClientWithoutCertificateIsRefused) {
  StartCluster("server", /*require_client_cert=*/true);
  ExpectRefused(Options("ca", ""));
  ExpectUntouched();
}

TEST_F(TlsTest, MutualTlsClientCertFromUntrustedCaIsRefused) {
  StartCluster("server", /*require_client_cert=*/true);
  ExpectRefused(Options("ca", "rogue_client"));
  ExpectUntouched();
}

TEST_F(TlsTest, MutualTlsRawDataStreamWithoutCertificateNeverReachesServer) {
  StartCluster("server", /*require_client_cert=*/true);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Pem("ca.pem");
  auto channel = grpc::CreateChannel(cluster_->addresses()[0],
                                     grpc::SslCredentials(ssl));
  auto stub = proto::ParameterServer::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  auto stream = stub->DataStream(&context);
  proto::DataRequest push;
  push.set_request_id(1);
  push.set_op(proto::PUSH);
  push.set_table_id(0);
  push.set_worker_id(-1);
  push.set_offset(0);
  push.set_length(4);
  push.set_first_chunk(true);
  push.set_values(EncodeRaw<float>(std::vector<float>(4, 1.0f)));
  stream->Write(push);  // may or may not report failure; Finish tells
  stream->WritesDone();
  proto::DataResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  ExpectUntouched();
}

TEST_F(TlsTest, ServerNameOverrideMatchesCertificateName) {
  // The server's certificate names only ps-shard.internal, not 127.0.0.1.
  StartCluster("named_server", /*require_client_cert=*/false);
  ClientOptions options = Options("ca", "");
  ExpectRefused(options);
  options.tls.server_name_override = "ps-shard.internal";
  ExpectConnectsAndWorks(options);
}

TEST_F(TlsTest, WrongOrMissingTokenIsUnauthenticated) {
  token_ = kToken;
  StartCluster("server", /*require_client_cert=*/true, kToken);
  ExpectRefused(Options("ca", "client", "not-the-token"),
                absl::StatusCode::kUnauthenticated);
  ExpectRefused(Options("ca", "client", ""),
                absl::StatusCode::kUnauthenticated);
  // The token's prefix is not enough either.
  ExpectRefused(Options("ca", "client", "s3cret"),
                absl::StatusCode::kUnauthenticated);
  ExpectUntouched();
  ExpectConnectsAndWorks(Options("ca", "client", kToken));
}

TEST_F(TlsTest, WrongTokenOnRawDataStreamIsUnauthenticatedAndAppliesNothing) {
  token_ = kToken;
  StartCluster("server", /*require_client_cert=*/true, kToken);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Pem("ca.pem");
  ssl.pem_cert_chain = Pem("client.pem");
  ssl.pem_private_key = Pem("client.key");
  auto channel = grpc::CreateChannel(cluster_->addresses()[0],
                                     grpc::SslCredentials(ssl));
  auto stub = proto::ParameterServer::NewStub(channel);
  for (const std::string& header :
       {std::string("Bearer wrong"), std::string(""),
        absl::StrCat("bearer ", kToken), std::string(kToken)}) {
    grpc::ClientContext context;
    if (!header.empty()) context.AddMetadata("authorization", header);
    auto stream = stub->DataStream(&context);
    proto::DataRequest push;
    push.set_request_id(1);
    push.set_op(proto::PUSH);
    push.set_table_id(0);
    push.set_worker_id(-1);
    push.set_offset(0);
    push.set_length(4);
    push.set_first_chunk(true);
    push.set_values(EncodeRaw<float>(std::vector<float>(4, 1.0f)));
    stream->Write(push);
    stream->WritesDone();
    proto::DataResponse response;
    EXPECT_FALSE(stream->Read(&response)) << header;
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << header;
  }
  // Unary control RPCs too.
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer wrong");
  proto::StatsResponse stats;
  EXPECT_EQ(stub->GetStats(&context, proto::StatsRequest(), &stats)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ExpectUntouched();
}

}  // namespace
}  // namespace ps::testing
