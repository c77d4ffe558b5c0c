// Which credentials the tls: settings give, and the errors for incomplete
// settings. (The TLS handshake itself: tests/security/tls_test.cc.)
#include "server/server_credentials.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(ServerCredentialsTest, TlsOffIsInsecure) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> c =
      ServerCredentials(TlsConfig());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(*c, nullptr);
}

TEST(ServerCredentialsTest, TlsNeedsCertificateAndKey) {
  TlsConfig tls;
  tls.enabled = true;
  tls.cert_file = "/nonexistent/cert.pem";
  EXPECT_EQ(ServerCredentials(tls).status(),
            absl::InvalidArgumentError(
                "tls.enabled needs tls.cert_file and tls.key_file"));
}

TEST(ServerCredentialsTest, UnreadableFileIsNamed) {
  TlsConfig tls;
  tls.enabled = true;
  tls.cert_file = "/nonexistent/cert.pem";
  tls.key_file = "/nonexistent/key.pem";
  const absl::Status s = ServerCredentials(tls).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("tls.cert_file"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("/nonexistent/cert.pem"), absl::string_view::npos)
      << s;
}

TEST(ServerCredentialsTest, MutualTlsNeedsCa) {
  const char* tmp = getenv("TEST_TMPDIR");
  const std::string pem = std::string(tmp != nullptr ? tmp : "/tmp") +
                          "/server_credentials_test.pem";
  std::ofstream(pem) << "not read: the CA check comes first\n";
  TlsConfig tls;
  tls.enabled = true;
  tls.cert_file = pem;
  tls.key_file = pem;
  tls.require_client_cert = true;
  EXPECT_EQ(ServerCredentials(tls).status(),
            absl::InvalidArgumentError(
                "tls.require_client_cert needs tls.ca_file"));
}

}  // namespace
}  // namespace ps
