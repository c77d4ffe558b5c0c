#include "deploy/ctl/inject_token.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "common/config.h"
#include "gtest/gtest.h"

namespace ps::ctl {
namespace {

constexpr char kConfig[] =
    "cluster:\n"
    "  servers: [\"127.0.0.1:7000\"]\n"
    "  num_workers: 1\n"
    "tables:\n"
    "  - {name: w, kind: dense, size: 4}";  // no final newline

TEST(InjectTokenTest, AppendsTheTokenAsTheLastLine) {
  absl::StatusOr<std::string> out =
      ConfigWithToken(kConfig, "c.yaml", "s3cr'et\n");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, std::string(kConfig) + "\nauth_token: 's3cr''et'\n");
  absl::StatusOr<ClusterConfig> parsed = ParseClusterConfig(*out, "out.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->auth_token, "s3cr'et");
  EXPECT_EQ(parsed->servers.size(), 1u);
}

TEST(InjectTokenTest, RefusesATokenInTheConfigItself) {
  absl::StatusOr<std::string> out = ConfigWithToken(
      std::string(kConfig) + "\nauth_token: plain\n", "c.yaml", "t");
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(
      out.status().message(), "c.yaml: auth_token is set in the config itself"))
      << out.status();
}

TEST(InjectTokenTest, RefusesEmptyAndNonPrintableTokens) {
  EXPECT_TRUE(absl::StrContains(
      ConfigWithToken(kConfig, "c.yaml", " \n").status().message(),
      "the token file is empty"));
  absl::Status space = ConfigWithToken(kConfig, "c.yaml", "a b").status();
  EXPECT_EQ(space.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(space.message(), "byte 32 at offset 1"))
      << space;
  EXPECT_FALSE(ConfigWithToken(kConfig, "c.yaml", "t\x01").ok());
}

TEST(InjectTokenTest, InvalidConfigNamesFileLineAndColumn) {
  absl::Status status =
      ConfigWithToken("cluster:\n  num_workers: x\n", "cm/cluster.yaml", "t")
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(status.message(), "cm/cluster.yaml:2:"))
      << status;
}

TEST(InjectTokenTest, ADocumentEndMarkerIsRefused) {
  absl::Status status =
      ConfigWithToken(std::string(kConfig) + "\n...\n", "c.yaml", "t").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "cannot append auth_token"))
      << status;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(InjectTokenTest, WritesTheFilePrivately) {
  const std::string config = TempPath("cluster.yaml");
  const std::string token = TempPath("token");
  const std::string out = TempPath("run.yaml");
  std::ofstream(config) << kConfig << "\n";
  std::ofstream(token) << "abc123\n";
  ASSERT_TRUE(InjectToken(config, token, out).ok());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), std::string(kConfig) + "\nauth_token: 'abc123'\n");
  struct stat st;
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(InjectToken(config, TempPath("missing"), out).code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ps::ctl
