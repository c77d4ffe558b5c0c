// LocalEtcd, the launcher tests and ps_launch use: it serves, it keeps its
// data across a restart, it explains failures, and nothing outlives it (its
// destructor, or a crash of the process that started it).
#include "server/replication/local_etcd.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {
namespace {

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// Waits until `pid` (not our child) is gone.
bool GoneWithin(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (!Alive(pid)) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return !Alive(pid);
}

std::unique_ptr<EtcdClient> ClientFor(const LocalEtcd& etcd) {
  EtcdClientOptions options;
  options.endpoints = {etcd.endpoint()};
  return *EtcdClient::Create(options);
}

TEST(LocalEtcdTest, ServesOnLoopbackAndRemovesEverythingOnDestruction) {
  absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start({});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EXPECT_TRUE(absl::StartsWith((*etcd)->endpoint(), "127.0.0.1:"));
  EXPECT_TRUE(ClientFor(**etcd)->Ping(absl::Seconds(2)).ok());
  const pid_t pid = (*etcd)->pid();
  const std::string data_dir = (*etcd)->data_dir();
  const std::string log_path = (*etcd)->log_path();
  EXPECT_TRUE(std::filesystem::exists(data_dir + "/member"));
  etcd->reset();
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(std::filesystem::exists(data_dir));
  EXPECT_FALSE(std::filesystem::exists(log_path));
}

TEST(LocalEtcdTest, RestartKeepsTheDataAndThePort) {
  absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start({});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  const std::string endpoint = (*etcd)->endpoint();
  etcdserverpb::PutRequest put;
  put.set_key("/kept");
  put.set_value("across the restart");
  ASSERT_TRUE(ClientFor(**etcd)->Put(put).ok());
  ASSERT_TRUE((*etcd)->Signal(SIGKILL).ok());
  EXPECT_EQ((*etcd)->Signal(SIGSTOP).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*etcd)->Restart().ok()) << (*etcd)->LogTail();
  EXPECT_EQ((*etcd)->endpoint(), endpoint);
  etcdserverpb::RangeRequest get;
  get.set_key("/kept");
  absl::StatusOr<etcdserverpb::RangeResponse> got = ClientFor(**etcd)->Range(get);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  EXPECT_EQ(got->kvs(0).value(), "across the restart");
  EXPECT_EQ((*etcd)->Restart().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(LocalEtcdTest, MissingBinaryNamesThePackage) {
  LocalEtcdOptions options;
  options.etcd_binary = "/nonexistent/etcd";
  const absl::Status status = LocalEtcd::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "etcd binary '/nonexistent/etcd' not found or not executable: install "
            "Debian's etcd-server (.ci/install_deps.sh does)");
}

TEST(LocalEtcdTest, TakenFixedPortFailsWithEtcdsReason) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  LocalEtcdOptions options;
  options.client_port = ntohs(addr.sin_port);
  const absl::Status status = LocalEtcd::Start(options).status();
  close(fd);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(status.message(), "exited")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "address already in use")) << status;
}

TEST(LocalEtcdTest, EtcdDiesWithTheProcessThatStartedIt) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A launcher that crashes without running any destructor. The prefix
    // (env execs etcd in place) makes LocalEtcd skip its gRPC readiness
    // probe: gRPC must not be used in a child forked after the parent used it.
    LocalEtcdOptions options;
    options.command_prefix = {"/usr/bin/env"};
    absl::StatusOr<std::unique_ptr<LocalEtcd>> etcd = LocalEtcd::Start(options);
    const std::string pid = etcd.ok() ? absl::StrCat((*etcd)->pid(), "\n") : "0\n";
    (void)!write(pipe_fds[1], pid.data(), pid.size());
    abort();
  }
  close(pipe_fds[1]);
  char buffer[32] = {};
  ASSERT_GT(read(pipe_fds[0], buffer, sizeof(buffer) - 1), 0);
  close(pipe_fds[0]);
  int etcd_pid = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripTrailingAsciiWhitespace(buffer), &etcd_pid));
  ASSERT_GT(etcd_pid, 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFSIGNALED(wstatus));
  EXPECT_TRUE(GoneWithin(etcd_pid, absl::Seconds(5)));
}

}  // namespace
}  // namespace ps::replication
