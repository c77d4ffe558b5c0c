#include "common/config.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/config_schema.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/table_schema.h"
#include "common/yaml_reader.h"

namespace ps {
namespace {

// ---------------------------------------------------------------------------
// Limits (kept here so messages and checks cannot disagree).

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kMinChunkBytes = 4096;
constexpr int64_t kMaxChunkBytes = 64 * kMiB;
constexpr int64_t kMinMessageBytes = 64 * 1024;
constexpr int64_t kMaxMessageBytes = 2147483647;  // gRPC limits are ints.
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr char kServersAllowed[] = "a non-empty list of \"host:port\" strings";

std::vector<std::string> DeviceNames() { return {"auto", "cpu", "cuda"}; }
std::vector<DeviceKind> DeviceValues() {
  return {DeviceKind::kAuto, DeviceKind::kCpu, DeviceKind::kCuda};
}

// ---------------------------------------------------------------------------
// cluster:

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
         (c >= '0' && c <= '9') || c == ':' || c == '.';
}

// Why `host` is not a DNS name, IPv4 address or [IPv6] address ("" if it is).
std::string BadHost(absl::string_view host) {
  if (host.empty()) return "empty host";
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return "bad IPv6 host";
    for (char c : host.substr(1, host.size() - 2)) {
      if (!IsIpv6Char(c)) return "bad IPv6 host";
    }
    return "";
  }
  for (char c : host) {
    if (!IsHostChar(c)) {
      return c == ':' ? "IPv6 hosts need brackets" : "bad character in host";
    }
  }
  return "";
}

bool IsPort(absl::string_view port) {
  int number = 0;
  return !port.empty() && port[0] != '+' && port[0] != '-' &&
         absl::SimpleAtoi(port, &number) && number >= 1 && number <= 65535 &&
         port.find_first_not_of("0123456789") == absl::string_view::npos;
}

absl::Status ReadServerAddress(const YamlReader& r, const YamlField& f,
                               std::string* out) {
  constexpr absl::string_view kAllowed =
      "allowed: \"host:port\" with a DNS name or IPv4 address (or [IPv6]) and "
      "a port in [1, 65535]";
  std::string address;
  RETURN_IF_ERROR(r.ReadString(f, "a \"host:port\" string", &address));
  const size_t colon = address.rfind(':');
  std::string why;
  if (colon == std::string::npos) {
    why = "no port";
  } else {
    why = BadHost(absl::string_view(address).substr(0, colon));
    if (why.empty() && !IsPort(absl::string_view(address).substr(colon + 1))) {
      why = "bad port";
    }
  }
  if (!why.empty()) {
    return r.Error(
        f.mark(), f.path,
        absl::StrCat("invalid server address '", address, "' (", why, ")"),
        kAllowed);
  }
  *out = std::move(address);
  return absl::OkStatus();
}

absl::Status ReadServers(const YamlReader& r, const YamlField& f,
                         ClusterConfig* config) {
  ASSIGN_OR_RETURN(std::vector<YamlField> items,
                   r.ReadList(f, kServersAllowed));
  if (items.empty()) {
    return r.Error(f.mark(), f.path, "no servers",
                   absl::StrCat("allowed: ", kServersAllowed));
  }
  config->servers.clear();
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string address;
    RETURN_IF_ERROR(ReadServerAddress(r, items[i], &address));
    auto [it, inserted] = seen.emplace(address, i);
    if (!inserted) {
      return r.Error(items[i].mark(), items[i].path,
                     absl::StrCat("duplicate server '", address, "' (also ",
                                  f.path, "[", it->second, "])"),
                     "each server address may appear once");
    }
    config->servers.push_back(std::move(address));
  }
  return absl::OkStatus();
}

const SectionSpec<ClusterConfig>& ClusterSection() {
  using C = ClusterConfig;
  static const auto* spec = [] {
    ConfigKey<C> servers;
    servers.name = "servers";
    servers.type = "list of strings";
    servers.allowed = kServersAllowed;
    servers.doc =
        "one \"host:port\" per shard; shard i is servers[i] (a DNS name, "
        "IPv4 address or [IPv6] address)";
    servers.read = &ReadServers;
    return new SectionSpec<C>{
        "who is in the cluster",
        {Required(std::move(servers), kServersAllowed),
         Required(IntKey<C>("num_workers", &C::num_workers, 1, 1 << 20,
                            "an integer in [1, 1048576]",
                            "number of workers (indexes 0..num_workers-1)"),
                  "an integer >= 1")},
        nullptr};
  }();
  return *spec;
}

// A key whose value is a section of its own (member `member` of `P`).
template <class P, class T>
ConfigKey<P> SubsectionKey(std::string name, const SectionSpec<T>& (*spec)(),
                           T P::*member) {
  ConfigKey<P> k;
  k.name = std::move(name);
  k.type = "mapping";
  k.allowed = "see its own section";
  k.doc = spec().doc;
  k.read = [spec, member](const YamlReader& r, const YamlField& f, P* c) {
    return ReadSection(r, f, spec(), &(c->*member));
  };
  return k;
}

// ---------------------------------------------------------------------------
// tls:

absl::Status CheckTls(const YamlReader& r, const YamlSection& s,
                      const TlsConfig& tls) {
  if (!tls.enabled) return absl::OkStatus();
  // Contradictions point at where the missing key belongs (the section).
  if (tls.cert_file.empty()) {
    return r.Error(
        s.mark(), JoinKeyPath(s.path(), "cert_file"),
        "required when tls.enabled is true",
        "set tls.cert_file to a PEM certificate or set tls.enabled: false");
  }
  if (tls.key_file.empty()) {
    return r.Error(
        s.mark(), JoinKeyPath(s.path(), "key_file"),
        "required when tls.enabled is true",
        "set tls.key_file to a PEM private key or set tls.enabled: false");
  }
  if (tls.require_client_cert && tls.ca_file.empty()) {
    return r.Error(s.mark(), JoinKeyPath(s.path(), "ca_file"),
                   "required when tls.require_client_cert is true",
                   "set tls.ca_file to the CA that signs client certificates "
                   "or set tls.require_client_cert: false");
  }
  return absl::OkStatus();
}

const SectionSpec<TlsConfig>& TlsSection() {
  using T = TlsConfig;
  static const auto* spec = new SectionSpec<T>{
      "transport security for every channel (servers and clients)",
      {BoolKey<T>("enabled", &T::enabled, "use TLS"),
       StringKey<T>("cert_file", &T::cert_file, "a path to a PEM certificate",
                    "this process's certificate (required when enabled)"),
       StringKey<T>("key_file", &T::key_file, "a path to a PEM private key",
                    "its private key (required when enabled)"),
       StringKey<T>("ca_file", &T::ca_file, "a path to a PEM CA certificate",
                    "CA that signs the peers' certificates"),
       BoolKey<T>("require_client_cert", &T::require_client_cert,
                  "mutual TLS: servers demand client certificates signed by "
                  "ca_file"),
       StringKey<T>("server_name_override", &T::server_name_override,
                    "a host name",
                    "clients: the name expected in the server certificate")},
      &CheckTls};
  return *spec;
}

// ---------------------------------------------------------------------------
// replication.etcd_tls:

absl::Status CheckEtcdTls(const YamlReader& r, const YamlSection& s,
                          const EtcdTlsConfig& tls) {
  if (!tls.enabled) return absl::OkStatus();
  if (tls.ca_file.empty()) {
    return r.Error(s.mark(), JoinKeyPath(s.path(), "ca_file"),
                   "required when etcd_tls.enabled is true",
                   "set etcd_tls.ca_file to the PEM CA that signs etcd's "
                   "certificate (etcd's --trusted-ca-file signs clients)");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return r.Error(s.mark(),
                   JoinKeyPath(s.path(), tls.cert_file.empty() ? "cert_file"
                                                               : "key_file"),
                   "cert_file and key_file go together",
                   "set both (a client certificate, for an etcd with "
                   "--client-cert-auth) or neither");
  }
  return absl::OkStatus();
}

const SectionSpec<EtcdTlsConfig>& EtcdTlsSection() {
  using T = EtcdTlsConfig;
  static const auto* spec = new SectionSpec<T>{
      "TLS to etcd (https client URLs) for every process that talks to it: "
      "servers, clients following the primary, ps_ctl and ps_launch",
      {BoolKey<T>("enabled", &T::enabled, "use TLS to etcd"),
       StringKey<T>("ca_file", &T::ca_file, "a path to a PEM CA certificate",
                    "CA that signs etcd's certificate (required when "
                    "enabled)"),
       StringKey<T>("cert_file", &T::cert_file, "a path to a PEM certificate",
                    "client certificate for an etcd started with "
                    "--client-cert-auth (with key_file)"),
       StringKey<T>("key_file", &T::key_file, "a path to a PEM private key",
                    "its private key")},
      &CheckEtcdTls};
  return *spec;
}

// ---------------------------------------------------------------------------
// replication:

absl::Status ReadEtcdEndpoints(const YamlReader& r, const YamlField& f,
                               ReplicationConfig* config) {
  ASSIGN_OR_RETURN(std::vector<YamlField> items,
                   r.ReadList(f, kServersAllowed));
  config->etcd_endpoints.clear();
  for (const YamlField& item : items) {
    std::string address;
    RETURN_IF_ERROR(ReadServerAddress(r, item, &address));
    config->etcd_endpoints.push_back(std::move(address));
  }
  return absl::OkStatus();
}

// One segment of the etcd keys /ps/<cluster_id>/...: a '/' would put the
// cluster's keys inside another cluster's prefix ("a/b" under "a"), where
// that cluster's clean-up (the Kubernetes completion hook deletes its
// prefix) or stale-set checks would reach them.
absl::Status CheckClusterId(const YamlReader& r, const YamlField& f,
                            const ReplicationConfig& replication) {
  for (char c : replication.cluster_id) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') {
      return r.Error(f.mark(), f.path,
                     absl::StrCat("'", replication.cluster_id,
                                  "' has the character '",
                                  absl::CHexEscape(std::string(1, c)), "'"),
                     "allowed: letters, digits, '.', '_' and '-' (one "
                     "segment of the etcd key prefix /ps/<cluster_id>/)");
    }
  }
  return absl::OkStatus();
}

// Not a section check: ps_launch parses with etcd_endpoints_optional (it
// starts etcd itself), which a section check cannot see.
absl::Status CheckEtcdEndpoints(const YamlReader& r, const YAML::Node& root,
                                const ReplicationConfig& replication,
                                const ConfigParseOptions& options) {
  if (replication.factor > 1 && replication.etcd_endpoints.empty() &&
      !options.etcd_endpoints_optional) {
    return r.Error(root["replication"].Mark(), "replication.etcd_endpoints",
                   "required when replication.factor > 1 (roles and terms "
                   "live in etcd)",
                   "list etcd's client endpoints, e.g. etcd_endpoints: "
                   "[\"127.0.0.1:2379\"], or set factor: 1");
  }
  return absl::OkStatus();
}

const SectionSpec<ReplicationConfig>& ReplicationSection() {
  using R = ReplicationConfig;
  static const auto* spec = [] {
    ConfigKey<R> endpoints;
    endpoints.name = "etcd_endpoints";
    endpoints.type = "list of strings";
    endpoints.allowed = kServersAllowed;
    endpoints.doc =
        "etcd client endpoints (\"host:port\") holding roles, terms and "
        "leases; required when factor > 1";
    endpoints.read = &ReadEtcdEndpoints;
    return new SectionSpec<R>{
        "replicated shards: R ps_server processes per shard (the same "
        "--index), one primary elected through etcd",
        {IntKey<R>("factor", &R::factor, 1, R::kMaxFactor,
                   absl::StrCat("an integer in [1, ", R::kMaxFactor, "]"),
                   "replicas per shard (1 = no replication, no etcd)"),
         std::move(endpoints),
         SubsectionKey("etcd_tls", &EtcdTlsSection, &R::etcd_tls),
         IntKey<R>("lease_ttl_s", &R::lease_ttl_s, 1, 3600,
                   "an integer in [1, 3600]",
                   "etcd lease TTL of a primary: a paused or cut-off "
                   "primary is replaced about ttl + 0.5 s after its last "
                   "renewal (a crashed one at once)"),
         IntKey<R>("ack_timeout_ms", &R::ack_timeout_ms, 100, 3600000,
                   "an integer in [100, 3600000]",
                   "a backup that acknowledges nothing for this long while "
                   "pushes wait for it is dropped from in_sync (pushes go "
                   "on without it; it exits and rejoins as a new backup)"),
         Then<R>(StringKey<R>("cluster_id", &R::cluster_id,
                           "letters, digits, '.', '_', '-' (\"\" = the "
                           "config file's stem)",
                           "etcd key prefix /ps/<cluster_id>/, so clusters "
                           "can share one etcd"),
              &CheckClusterId)}};
  }();
  return *spec;
}

// ---------------------------------------------------------------------------
// server:

// long-function: the declarative list of every server key, one entry each.
const SectionSpec<ServerOptions>& ServerSection() {
  using S = ServerOptions;
  static const auto* spec = new SectionSpec<S>{
      "settings of every ps_server",
      {NameKey<S, DeviceKind>("device", &S::device, DeviceNames(),
                              DeviceValues(), "device",
                              "where updates run: auto = the GPU when one "
                              "exists, else the CPU"),
       IntKey<S>("threads", &S::threads, 1, 256, "an integer in [1, 256]",
                 "shard executor threads"),
       IntKey<S>("heartbeat_timeout_ms", &S::heartbeat_timeout_ms, 1,
                 kInt64Max, "an integer > 0",
                 "a live worker silent this long is evicted"),
       IntKey<S>("worker_join_timeout_ms", &S::worker_join_timeout_ms, 1,
                 kInt64Max, "an integer > 0",
                 "grace for workers never seen since the server started"),
       BoolKey<S>("reject_non_finite", &S::reject_non_finite,
                  "NaN / Inf gradients are refused with INVALID_ARGUMENT"),
       IntKey<S>("max_message_bytes", &S::max_message_bytes, kMinMessageBytes,
                 kMaxMessageBytes, "an integer in [65536, 2147483647]",
                 "largest gRPC message accepted"),
       StringKey<S>("checkpoint_dir", &S::checkpoint_dir,
                    "a directory path (\"\" = no checkpoints)",
                    "where each shard writes its checkpoints (\"\" = none)"),
       Then<S>(IntKey<S>("checkpoint_interval_s", &S::checkpoint_interval_s,
                         0, kInt64Max, "an integer >= 0 (0 = on demand only)",
                         "seconds between periodic checkpoints (0 = only "
                         "on demand and on SIGTERM)"),
               [](const YamlReader& r, const YamlField& f, const S& s) {
                 if (s.checkpoint_interval_s > 0 && s.checkpoint_dir.empty()) {
                   return r.Error(
                       f.mark(), f.path, "periodic checkpoints need a directory",
                       "set server.checkpoint_dir or set checkpoint_interval_s: 0");
                 }
                 return absl::OkStatus();
               }),
       OnlyWhen<S>(
           NameKey<S, CheckpointAgreement>(
               "checkpoint_agreement", &S::checkpoint_agreement,
               {"shared_dir", "peers"},
               {CheckpointAgreement::kSharedDir, CheckpointAgreement::kPeers},
               "checkpoint agreement",
               "how the shards agree on the cluster checkpoint they restore "
               "(the newest id whose part is valid on every shard): "
               "shared_dir = every server reads every shard's directory "
               "(checkpoint_dir is one directory shared by all servers); "
               "peers = each server verifies its own files and asks every "
               "other server (cluster.servers) over gRPC, for servers with "
               "their own volumes (Kubernetes)"),
           [](const S& s) { return !s.checkpoint_dir.empty(); },
           [](const S&) {
             return std::string(
                 "checkpoint_agreement applies to checkpoints, and "
                 "server.checkpoint_dir is not set");
           },
           "set server.checkpoint_dir, or remove checkpoint_agreement"),
       OnlyWhen<S>(
           IntKey<S>("checkpoint_peer_timeout_s",
                     &S::checkpoint_peer_timeout_s, 1, 86400,
                     "an integer in [1, 86400]",
                     "checkpoint_agreement peers: how long a starting server "
                     "waits for every other server to answer before it exits "
                     "(status 1) naming the shards that did not"),
           [](const S& s) {
             return s.checkpoint_agreement == CheckpointAgreement::kPeers;
           },
           [](const S&) {
             return std::string(
                 "checkpoint_peer_timeout_s applies to checkpoint_agreement: "
                 "peers only");
           },
           "set checkpoint_agreement: peers, or remove "
           "checkpoint_peer_timeout_s"),
       IntKey<S>("metrics_port", &S::metrics_port, -1, 65535,
                 "an integer in [-1, 65535] (-1 = off, 0 = any port)",
                 "Prometheus /metrics port (-1 = off, 0 = an OS-picked port)"),
       IntKey<S>("dedup_window", &S::dedup_window, 1, 1 << 24,
                 "an integer in [1, 16777216]",
                 "push ids remembered per client for exactly-once retries"),
       IntKey<S>("memory_cap_bytes", &S::memory_cap_bytes, 0,
                 int64_t{1} << 50, "an integer in [0, 2^50] (0 = no cap)",
                 "table memory one server may hold (dense tables and sparse "
                 "rows, counted per row as `ps_ctl plan` computes it); a "
                 "request that would create rows beyond it fails with "
                 "RESOURCE_EXHAUSTED and the server keeps serving")},
      nullptr};
  return *spec;
}

// ---------------------------------------------------------------------------
// client:

absl::Status CheckClient(const YamlReader& r, const YamlSection& s,
                         const ClientConfig& client) {
  if (client.reconnect_max_backoff_ms < client.reconnect_initial_backoff_ms) {
    const YamlField* v = s.Get("reconnect_max_backoff_ms");
    if (v == nullptr) v = s.Get("reconnect_initial_backoff_ms");
    return r.Error(v->mark(), v->path,
                   absl::StrCat("reconnect_max_backoff_ms (",
                                client.reconnect_max_backoff_ms,
                                ") is below reconnect_initial_backoff_ms (",
                                client.reconnect_initial_backoff_ms, ")"),
                   "make client.reconnect_max_backoff_ms >= "
                   "client.reconnect_initial_backoff_ms");
  }
  return absl::OkStatus();
}

const SectionSpec<ClientConfig>& ClientSection() {
  using C = ClientConfig;
  static const auto* spec = new SectionSpec<C>{
      "settings of every client (workers, ps_ctl, SDK users)",
      {IntKey<C>("chunk_bytes", &C::chunk_bytes, kMinChunkBytes,
                 kMaxChunkBytes,
                 "an integer in [4096, 67108864] (4 KiB to 64 MiB)",
                 "dense and sparse requests are cut into chunks of at most "
                 "this many bytes, which pipeline; on links slower than the "
                 "hosts' CPUs (about 1 Gbit/s) 131072 lets a push-pull's "
                 "two directions overlap (a 1 MiB push-pull on a 1 Gbit/s "
                 "link: 0.69 -> 0.95 of the link rate)"),
       IntKey<C>("rpc_timeout_ms", &C::rpc_timeout_ms, 1, kInt64Max,
                 "an integer > 0",
                 "deadline of control RPCs and of the handshake"),
       IntKey<C>("heartbeat_interval_ms", &C::heartbeat_interval_ms, 1,
                 kInt64Max, "an integer > 0",
                 "workers' heartbeat period (below "
                 "server.heartbeat_timeout_ms)"),
       IntKey<C>("reconnect_initial_backoff_ms",
                 &C::reconnect_initial_backoff_ms, 1, kInt64Max,
                 "an integer > 0", "first wait before reconnecting"),
       IntKey<C>("reconnect_max_backoff_ms", &C::reconnect_max_backoff_ms, 1,
                 kInt64Max, "an integer > 0",
                 "longest wait between reconnect attempts (exponential "
                 "backoff)"),
       IntKey<C>("max_reconnect_attempts", &C::max_reconnect_attempts, 0,
                 kInt64Max, "an integer >= 0",
                 "attempts before requests fail UNAVAILABLE"),
       Then<C>(IntKey<C>("keepalive_ms", &C::keepalive_ms, 0, kInt64Max,
                         "0 (off) or an integer >= 1000",
                         "a quiet connection with calls open is pinged after "
                         "this long (0 = off)"),
               [](const YamlReader& r, const YamlField& f, const C& c) {
                 if (c.keepalive_ms > 0 && c.keepalive_ms < kMinKeepaliveMs) {
                   return r.Error(
                       f.mark(), f.path,
                       absl::StrCat("keepalive_ms ", c.keepalive_ms,
                                    " is below ", kMinKeepaliveMs,
                                    " (servers refuse pings more often than "
                                    "that)"),
                       "set client.keepalive_ms to 0 (off) or to 1000 or "
                       "more");
                 }
                 return absl::OkStatus();
               }),
       IntKey<C>("keepalive_timeout_ms", &C::keepalive_timeout_ms, 1,
                 kInt64Max, "an integer > 0",
                 "a ping unanswered this long drops the connection (then "
                 "reconnect and resend)")},
      &CheckClient};
  return *spec;
}

// ---------------------------------------------------------------------------
// training:

absl::Status ReadHidden(const YamlReader& r, const YamlField& f,
                        TrainingConfig* training) {
  constexpr absl::string_view kAllowed =
      "a non-empty list of layer widths in [1, 1048576]";
  ASSIGN_OR_RETURN(std::vector<YamlField> items, r.ReadList(f, kAllowed));
  if (items.empty()) {
    return r.Error(f.mark(), f.path, "an mlp needs at least one hidden layer",
                   absl::StrCat("allowed: ", kAllowed));
  }
  training->hidden.clear();
  for (const YamlField& item : items) {
    int64_t width = 0;
    RETURN_IF_ERROR(
        r.ReadInt64(item, 1, kMaxHidden, "an integer in [1, 1048576]", &width));
    training->hidden.push_back(static_cast<int>(width));
  }
  return absl::OkStatus();
}

// A string key whose value is one of `names` ("unknown <what> 'x'").
ConfigKey<TrainingConfig> ChoiceKey(std::string name,
                                    std::string TrainingConfig::*member,
                                    std::vector<std::string> names,
                                    std::string what, std::string doc) {
  return NameKey<TrainingConfig, std::string>(std::move(name), member, names,
                                              names, std::move(what),
                                              std::move(doc));
}

ConfigKey<TrainingConfig> LibsvmFileKey(std::string name,
                                        std::string TrainingConfig::*member,
                                        std::string doc) {
  const std::string fix =
      absl::StrCat("remove training.", name, " or set training.dataset: libsvm");
  return OnlyWhen<TrainingConfig>(
      StringKey<TrainingConfig>(std::move(name), member,
                                "a path to a LIBSVM text file", std::move(doc)),
      [](const TrainingConfig& t) { return t.dataset == "libsvm"; },
      [](const TrainingConfig&) { return "only used by dataset libsvm"; },
      fix);
}

absl::Status CheckTraining(const YamlReader& r, const YamlSection& s,
                           const TrainingConfig& training) {
  if (training.dataset == "libsvm" && training.train_file.empty()) {
    return r.Error(s.mark(), JoinKeyPath(s.path(), "train_file"),
                   "required when training.dataset is libsvm",
                   "set training.train_file to a LIBSVM text file");
  }
  return absl::OkStatus();
}

const SectionSpec<TrainingConfig>& TrainingSection() {
  using T = TrainingConfig;
  static const auto* spec = [] {
    ConfigKey<T> hidden;
    hidden.name = "hidden";
    hidden.type = "list of integers";
    hidden.allowed = "a non-empty list of layer widths in [1, 1048576]";
    hidden.doc = "mlp: hidden layer widths";
    hidden.show = [](const T& t) {
      return absl::StrCat("[", absl::StrJoin(t.hidden, ", "), "]");
    };
    hidden.read = &ReadHidden;
    return new SectionSpec<T>{
        "the job ps_worker runs (the built-in trainer; other trainers "
        "ignore it)",
        {ChoiceKey("model", &T::model, {"softmax", "mlp"}, "model",
                   "softmax regression or a ReLU MLP"),
         OnlyWhen<T>(
             std::move(hidden), [](const T& t) { return t.model == "mlp"; },
             [](const T&) { return "only used by model mlp"; },
             "remove training.hidden or set training.model: mlp"),
         ChoiceKey("dataset", &T::dataset, {"fashion_mnist", "libsvm"},
                   "dataset", "the training data"),
         StringKey<T>("data_dir", &T::data_dir, "a directory path",
                      "fashion_mnist: directory of the IDX files"),
         LibsvmFileKey("train_file", &T::train_file,
                       "libsvm: training examples (required for libsvm)"),
         LibsvmFileKey("test_file", &T::test_file, "libsvm: test examples"),
         IntKey<T>("batch_size", &T::batch_size, 1, 1 << 24,
                   "an integer in [1, 16777216]", "examples per worker step"),
         IntKey<T>("epochs", &T::epochs, 1, 1 << 24,
                   "an integer in [1, 16777216]", "passes over the data"),
         FloatKey<T>("lr_decay", &T::lr_decay,
                     [](double x) { return x > 0 && x <= 1; },
                     "a number in (0, 1]",
                     "the learning rate is multiplied by this per epoch"),
         IntKey<T>("eval_every_steps", &T::eval_every_steps, 0,
                   std::numeric_limits<int>::max(),
                   "an integer >= 0 (0 = only at the end)",
                   "worker 0 evaluates on the test set this often"),
         Uint64Key<T>("seed", &T::seed,
                      "shuffling and initialization seed"),
         NameKey<T, DeviceKind>("device", &T::device, DeviceNames(),
                                DeviceValues(), "device",
                                "where gradients are computed (auto = the "
                                "GPU when one exists)")},
        &CheckTraining};
  }();
  return *spec;
}

// ---------------------------------------------------------------------------
// The top level.

absl::Status ReadTables(const YamlReader& r, const YamlField& f,
                        ClusterConfig* config) {
  constexpr absl::string_view kAllowed = "a non-empty list of table mappings";
  ASSIGN_OR_RETURN(std::vector<YamlField> items, r.ReadList(f, kAllowed));
  if (items.empty()) {
    return r.Error(f.mark(), f.path, "no tables",
                   absl::StrCat("allowed: ", kAllowed));
  }
  config->tables.clear();
  absl::flat_hash_map<std::string, size_t> names;
  for (size_t i = 0; i < items.size(); ++i) {
    TableConfig table;
    table.table_id = static_cast<uint32_t>(i);
    RETURN_IF_ERROR(ReadTableConfig(r, items[i], &table));
    auto [it, inserted] = names.emplace(table.name, i);
    if (!inserted) {
      const YAML::Node name = items[i].node["name"];
      return r.Error(name.Mark(), absl::StrCat(items[i].path, ".name"),
                     absl::StrCat("duplicate table name '", table.name,
                                  "' (also ", f.path, "[", it->second, "])"),
                     "table names must be unique");
    }
    config->tables.push_back(std::move(table));
  }
  return absl::OkStatus();
}

// What a replicated cluster cannot keep yet (server/replication/DESIGN.md,
// section 11): every replica of a shard would write the same checkpoint
// files. Refused here rather than clobbered later. `checkpoint_dir` is the
// field that sets server.checkpoint_dir, if any.
absl::Status CheckReplicatedCheckpoints(
    const YamlReader& r, const ClusterConfig& config,
    const std::optional<YamlField>& checkpoint_dir) {
  if (config.replication.factor <= 1) return absl::OkStatus();
  if (checkpoint_dir.has_value() && !config.server.checkpoint_dir.empty()) {
    return r.Error(checkpoint_dir->mark(), checkpoint_dir->path,
                   "checkpoints are not supported with replication.factor > "
                   "1 yet (every replica of a shard would write the same "
                   "shard's files; the replicas themselves hold the copies)",
                   "remove server.checkpoint_dir, or set "
                   "replication.factor: 1");
  }
  return absl::OkStatus();
}

absl::Status CheckCrossSection(const YamlReader& r, const YamlSection& root,
                               const ClusterConfig& config) {
  // The field `key` of section `section`, when the file sets it.
  auto field_in = [&](const char* section,
                      const char* key) -> std::optional<YamlField> {
    const YamlField* sec = root.Get(section);
    if (sec == nullptr || !sec->node.IsMap()) return std::nullopt;
    for (auto it = sec->node.begin(); it != sec->node.end(); ++it) {
      if (it->first.Scalar() == key) {
        return YamlField{JoinKeyPath(sec->path, key), it->second,
                         it->first.Mark()};
      }
    }
    return std::nullopt;
  };
  if (config.client.heartbeat_interval_ms >=
      config.server.heartbeat_timeout_ms) {
    std::optional<YamlField> v = field_in("client", "heartbeat_interval_ms");
    if (!v) v = field_in("server", "heartbeat_timeout_ms");
    return r.Error(v->mark(), v->path,
                   absl::StrCat("client.heartbeat_interval_ms (",
                                config.client.heartbeat_interval_ms,
                                ") must be below server.heartbeat_timeout_ms (",
                                config.server.heartbeat_timeout_ms,
                                "), or live workers get evicted"),
                   "lower client.heartbeat_interval_ms or raise "
                   "server.heartbeat_timeout_ms");
  }
  return CheckReplicatedCheckpoints(r, config,
                                    field_in("server", "checkpoint_dir"));
}

const SectionSpec<ClusterConfig>& TopLevel() {
  using C = ClusterConfig;
  static const auto* spec = [] {
    ConfigKey<C> cluster;
    cluster.name = "cluster";
    cluster.type = "mapping";
    cluster.allowed = "see its own section";
    cluster.doc = ClusterSection().doc;
    cluster.read = [](const YamlReader& r, const YamlField& f, C* c) {
      return ReadSection(r, f, ClusterSection(), c);
    };
    ConfigKey<C> log_level = StringKey<C>(
        "log_level", &C::log_level, AllowedLogLevels(),
        "log level of every process");
    log_level = Then<C>(std::move(log_level),
                        [](const YamlReader& r, const YamlField& f, const C& c) {
                          const absl::Status valid = ValidateLogLevel(c.log_level);
                          if (valid.ok()) return valid;
                          return r.Error(f.mark(), f.path, valid.message());
                        });
    ConfigKey<C> tables;
    tables.name = "tables";
    tables.type = "list of mappings";
    tables.allowed = "a non-empty list of table mappings";
    tables.doc = "the model's tables: see tables[]";
    tables.read = &ReadTables;
    return new SectionSpec<C>{
        "the whole file",
        {Required(std::move(cluster),
                  "a mapping with servers and num_workers"),
         std::move(log_level),
         StringKey<C>("auth_token", &C::auth_token,
                      "a string (\"\" = no token)",
                      "bearer token every request must carry (\"\" = none)"),
         SubsectionKey("tls", &TlsSection, &C::tls),
         SubsectionKey("server", &ServerSection, &C::server),
         SubsectionKey("client", &ClientSection, &C::client),
         SubsectionKey("training", &TrainingSection, &C::training),
         SubsectionKey("replication", &ReplicationSection, &C::replication),
         Required(std::move(tables), "a non-empty list of table mappings")},
        &CheckCrossSection};
  }();
  return *spec;
}

}  // namespace

const TableConfig* ClusterConfig::FindTable(const std::string& name) const {
  for (const TableConfig& table : tables) {
    if (table.name == name) return &table;
  }
  return nullptr;
}

absl::StatusOr<ClusterConfig> ParseClusterConfig(
    const std::string& yaml_text, const std::string& source_name,
    const ConfigParseOptions& options) {
  const YamlReader reader(source_name);
  ASSIGN_OR_RETURN(YAML::Node root, reader.Load(yaml_text));
  const SectionSpec<ClusterConfig>& top = TopLevel();
  const std::vector<std::string> top_keys = KeyNames(top.keys);
  if (root.IsNull()) {
    return reader.Error(root.Mark(), "<root>", "the config is empty",
                        "required keys: cluster, tables");
  }
  if (!root.IsMap()) {
    return reader.Error(
        root.Mark(), "<root>",
        absl::StrCat("expected a mapping, got ", DescribeYaml(root)),
        absl::StrCat("allowed keys: ", absl::StrJoin(top_keys, ", ")));
  }
  ClusterConfig config;
  config.source_path = source_name;
  RETURN_IF_ERROR(
      ReadSection(reader, YamlField{"", root, root.Mark()}, top, &config));
  RETURN_IF_ERROR(CheckEtcdEndpoints(reader, root, config.replication, options));
  return config;
}

absl::StatusOr<ClusterConfig> LoadClusterConfig(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("cluster config file not found: ", path));
    }
    return absl::ErrnoToStatus(
        error, absl::StrCat("cannot read cluster config file ", path));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster config path is a directory, not a file: ", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot open cluster config file ", path));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(
        absl::StrCat("error reading cluster config file ", path));
  }
  return ParseClusterConfig(text.str(), path);
}

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kAuto:
      return "auto";
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

std::vector<SectionDoc> ConfigReference() {
  std::vector<SectionDoc> docs;
  docs.push_back(DocumentSection("(top level)", TopLevel()));
  docs.push_back(DocumentSection("cluster", ClusterSection()));
  docs.push_back(DocumentSection("tls", TlsSection()));
  docs.push_back(DocumentSection("server", ServerSection()));
  docs.push_back(DocumentSection("client", ClientSection()));
  docs.push_back(DocumentSection("training", TrainingSection()));
  docs.push_back(DocumentSection("replication", ReplicationSection()));
  docs.push_back(
      DocumentSection("replication.etcd_tls", EtcdTlsSection()));
  for (SectionDoc& d : TableReference()) docs.push_back(std::move(d));
  return docs;
}

}  // namespace ps
