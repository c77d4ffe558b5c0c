// ps_ctl: admin CLI of the parameter-server cluster.
//
//   ps_ctl (--config FILE | --servers HOST:PORT,...) [--json]
//          [--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T]
//          status | stats | checkpoint
//
// With --config the servers, TLS settings, bearer token and tables come from
// the cluster config (the handshake checks the servers against its tables);
// --servers talks plaintext to the listed shards, in shard order, and adopts
// their tables. See deploy/ctl/README.md.
//
// Exit status: 0 OK; 1 a server unreachable / not serving or an RPC failed
// (each error names the server's address); 2 bad command line or config.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/ctl/ctl.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML file");
ABSL_FLAG(std::string, servers, "",
          "comma-separated host:port of every shard, in shard order "
          "(instead of --config; plaintext)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of tables");
ABSL_FLAG(int64_t, timeout_ms, 3000,
          "health probe and status / stats RPC timeout, milliseconds");
ABSL_FLAG(int64_t, checkpoint_timeout_ms, 600000,
          "how long `checkpoint` waits for the shards, milliseconds");
ABSL_FLAG(std::string, auth_token, "",
          "bearer token (default: the config's auth_token)");

namespace {

constexpr char kUsage[] =
    "ps_ctl (--config FILE | --servers HOST:PORT,...) [--json] "
    "[--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T] "
    "status|stats|checkpoint";

int Usage(const std::string& message) {
  std::cerr << "ps_ctl: " << message << "\nusage: " << kUsage << "\n";
  return ps::ctl::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char*> positional = ps::ParseCommandLineWithHelp(
      argc, argv,
      absl::StrCat("admin CLI of the parameter-server cluster.\n\n  ", kUsage,
                   "\n\nExit status: 0 OK; 1 a server unreachable / not "
                   "serving or an RPC failed; 2 bad command line or config."),
      {__FILE__});
  if (positional.size() != 2) {
    return Usage("expected exactly one command: status, stats or checkpoint");
  }
  ps::ctl::CtlOptions options;
  options.command = positional[1];
  options.json = absl::GetFlag(FLAGS_json);
  const int64_t timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  const int64_t checkpoint_timeout_ms =
      absl::GetFlag(FLAGS_checkpoint_timeout_ms);
  if (timeout_ms <= 0 || checkpoint_timeout_ms <= 0) {
    return Usage("--timeout_ms and --checkpoint_timeout_ms must be > 0");
  }
  options.timeout = absl::Milliseconds(timeout_ms);
  options.checkpoint_timeout = absl::Milliseconds(checkpoint_timeout_ms);

  const std::string config_path = absl::GetFlag(FLAGS_config);
  const std::string servers = absl::GetFlag(FLAGS_servers);
  if (config_path.empty() == servers.empty()) {
    return Usage("pass exactly one of --config and --servers");
  }
  if (!config_path.empty()) {
    absl::StatusOr<ps::ClusterConfig> config =
        ps::LoadClusterConfig(config_path);
    if (!config.ok()) return Usage(std::string(config.status().message()));
    options.client = ps::ClientOptions::FromConfig(*config, -1);
  } else {
    options.client.servers =
        absl::StrSplit(servers, ',', absl::SkipWhitespace());
    if (options.client.servers.empty()) return Usage("--servers is empty");
  }
  if (const std::string token = absl::GetFlag(FLAGS_auth_token);
      !token.empty()) {
    options.client.auth_token = token;
  }
  return ps::ctl::RunCommand(options, std::cout, std::cerr);
}
