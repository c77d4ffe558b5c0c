// ps_ctl: admin CLI of the parameter-server cluster.
//
//   ps_ctl (--config FILE | --servers HOST:PORT,...) [--json]
//          [--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T]
//          status | stats | checkpoint
//   ps_ctl render-k8s --config BASE/cluster.yaml --num_servers N
//          --num_workers M --device cpu|cuda --image NAME:TAG
//          [--namespace NS] --out DIR [--check]
//   ps_ctl inject-token --config FILE --token_file FILE --out FILE
//   ps_ctl config-reference
//
// With --config the servers, TLS settings, bearer token and tables come from
// the cluster config (the handshake checks the servers against its tables);
// --servers talks plaintext to the listed shards, in shard order, and adopts
// their tables. render-k8s writes a Kustomize overlay for N servers and M
// workers (deploy/ctl/render_k8s.h); inject-token writes a config with the
// bearer token of a Secret (deploy/ctl/inject_token.h); config-reference
// prints the reference of every config key as Markdown
// (deploy/CONFIG_REFERENCE.md). See deploy/ctl/README.md.
//
// Exit status: 0 OK; 1 a server unreachable / not serving or an RPC failed
// (each error names the server's address), or render-k8s --check found a
// stale overlay, or a file could not be written; 2 bad command line, config
// or token.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/ctl/config_reference.h"
#include "deploy/ctl/ctl.h"
#include "deploy/ctl/inject_token.h"
#include "deploy/ctl/render_k8s.h"

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
// render-k8s and inject-token.
ABSL_FLAG(int, num_servers, 0, "render-k8s: number of servers (shards)");
ABSL_FLAG(int, num_workers, 0, "render-k8s: number of workers");
ABSL_FLAG(std::string, device, "", "render-k8s: cpu or cuda");
ABSL_FLAG(std::string, image, "",
          "render-k8s: the image, NAME:TAG or NAME@sha256:DIGEST");
ABSL_FLAG(std::string, namespace, "ps", "render-k8s: Kubernetes namespace");
ABSL_FLAG(std::string, out, "",
          "render-k8s: overlay directory; inject-token: output config file");
ABSL_FLAG(bool, check, false,
          "render-k8s: compare with the files in --out instead of writing");
ABSL_FLAG(std::string, token_file, "", "inject-token: the bearer token file");

namespace {

constexpr char kUsage[] =
    "ps_ctl (--config FILE | --servers HOST:PORT,...) [--json] "
    "[--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T] "
    "status|stats|checkpoint\n"
    "  or: ps_ctl render-k8s --config BASE/cluster.yaml --num_servers N "
    "--num_workers M --device cpu|cuda --image NAME:TAG [--namespace NS] "
    "--out DIR [--check]\n"
    "  or: ps_ctl inject-token --config FILE --token_file FILE --out FILE\n"
    "  or: ps_ctl config-reference";

int Usage(const std::string& message) {
  std::cerr << "ps_ctl: " << message << "\nusage: " << kUsage << "\n";
  return ps::ctl::kExitUsage;
}

int Fail(const absl::Status& status) {
  std::cerr << "ps_ctl: " << status.message() << "\n";
  return absl::IsInvalidArgument(status) || absl::IsNotFound(status)
             ? ps::ctl::kExitUsage
             : ps::ctl::kExitError;
}

int RenderK8s() {
  ps::ctl::RenderOptions options;
  options.config_path = absl::GetFlag(FLAGS_config);
  options.num_servers = absl::GetFlag(FLAGS_num_servers);
  options.num_workers = absl::GetFlag(FLAGS_num_workers);
  options.device = absl::GetFlag(FLAGS_device);
  options.image = absl::GetFlag(FLAGS_image);
  options.name_space = absl::GetFlag(FLAGS_namespace);
  options.out_dir = absl::GetFlag(FLAGS_out);
  if (absl::GetFlag(FLAGS_check)) {
    const absl::Status status = ps::ctl::CheckOverlay(options);
    if (!status.ok()) return Fail(status);
    std::cout << options.out_dir << " is up to date\n";
    return ps::ctl::kExitOk;
  }
  std::string summary;
  if (const absl::Status status = ps::ctl::WriteOverlay(options, &summary);
      !status.ok()) {
    return Fail(status);
  }
  std::cout << summary;
  return ps::ctl::kExitOk;
}

int InjectToken() {
  const std::string config = absl::GetFlag(FLAGS_config);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (config.empty() || token_file.empty() || out.empty()) {
    return Usage("inject-token needs --config, --token_file and --out");
  }
  if (const absl::Status status = ps::ctl::InjectToken(config, token_file, out);
      !status.ok()) {
    return Fail(status);
  }
  std::cout << "wrote " << out << " (" << config << " with the token of "
            << token_file << ")\n";
  return ps::ctl::kExitOk;
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
    return Usage(
        "expected exactly one command: status, stats, checkpoint, "
        "render-k8s, inject-token or config-reference");
  }
  if (std::string(positional[1]) == "config-reference") {
    std::cout << ps::ctl::RenderConfigReference();
    return ps::ctl::kExitOk;
  }
  if (std::string(positional[1]) == "render-k8s") return RenderK8s();
  if (std::string(positional[1]) == "inject-token") return InjectToken();
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
