#include "common/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace ps {
namespace {

// ---------------------------------------------------------------------------
// Names of the enums, shared by parsing and the *Name() functions.

template <typename E>
struct EnumName {
  const char* name;
  E value;
};

constexpr EnumName<TableKind> kTableKinds[] = {{"dense", TableKind::kDense},
                                               {"sparse", TableKind::kSparse}};
constexpr EnumName<Consistency> kConsistencies[] = {
    {"async", Consistency::kAsync},
    {"sync", Consistency::kSync},
    {"ssp", Consistency::kSsp}};
constexpr EnumName<OptimizerType> kOptimizers[] = {
    {"sgd", OptimizerType::kSgd},
    {"momentum", OptimizerType::kMomentum},
    {"adagrad", OptimizerType::kAdagrad},
    {"adam", OptimizerType::kAdam}};
constexpr EnumName<InitializerType> kInitializers[] = {
    {"zeros", InitializerType::kZeros},
    {"constant", InitializerType::kConstant},
    {"uniform", InitializerType::kUniform},
    {"normal", InitializerType::kNormal}};
constexpr EnumName<DeviceKind> kDevices[] = {{"auto", DeviceKind::kAuto},
                                             {"cpu", DeviceKind::kCpu},
                                             {"cuda", DeviceKind::kCuda}};

template <typename E, size_t N>
const char* NameOf(const EnumName<E> (&names)[N], E value) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return "unknown";
}

template <typename E, size_t N>
std::string AllNames(const EnumName<E> (&names)[N]) {
  std::vector<std::string> parts;
  for (const EnumName<E>& n : names) parts.push_back(n.name);
  return absl::StrJoin(parts, ", ");
}

// ---------------------------------------------------------------------------
// Limits (kept here so messages and checks cannot disagree).

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kMinChunkBytes = 4096;
constexpr int64_t kMaxChunkBytes = 64 * kMiB;
constexpr int64_t kMinMessageBytes = 64 * 1024;
constexpr int64_t kMaxMessageBytes = 2147483647;  // gRPC limits are ints.
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxDenseSize = int64_t{1} << 48;
constexpr int64_t kMaxSparseDim = int64_t{1} << 20;
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr int64_t kMaxStaleness = 1000000;
constexpr size_t kMaxTableNameLength = 128;

// ---------------------------------------------------------------------------
// Parsing helpers.

std::string JoinPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

// True for scalars written without quotes or an explicit tag: only those are
// numbers / booleans in YAML; '"5"' is a string.
bool IsPlainScalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() == "?";
}

// How a value is named in "expected X, got Y" messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value";
    case YAML::NodeType::Scalar:
      if (IsPlainScalar(node)) return absl::StrCat("'", node.Scalar(), "'");
      return absl::StrCat("string '", node.Scalar(), "'");
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// One key: value of a mapping.
struct Field {
  std::string path;  // e.g. "tables[0].optimizer.type"
  YAML::Node node;   // the value
  YAML::Mark key_mark;

  // Where a message about the value points. An empty value ("key:" with
  // nothing after it) gets a mark on the following line, so use the key's.
  YAML::Mark mark() const { return node.IsNull() ? key_mark : node.Mark(); }
};

class ConfigParser {
 public:
  explicit ConfigParser(std::string source) : source_(std::move(source)) {}

  absl::StatusOr<ClusterConfig> Parse(const std::string& yaml_text);

 private:
  // A validated mapping: all keys known, none repeated.
  class Section {
   public:
    const std::string& path() const { return path_; }
    const YAML::Mark& mark() const { return mark_; }
    // The field for `key`, or nullptr when absent.
    const Field* Get(absl::string_view key) const {
      auto it = index_.find(key);
      return it == index_.end() ? nullptr : &fields_[it->second];
    }
    const std::vector<Field>& fields() const { return fields_; }

   private:
    friend class ConfigParser;
    std::string path_;
    YAML::Mark mark_;
    std::vector<Field> fields_;  // in file order
    absl::flat_hash_map<std::string, size_t> index_;
  };

  absl::Status Error(const YAML::Mark& mark, absl::string_view path,
                     absl::string_view problem,
                     absl::string_view allowed) const;
  absl::Status Error(const YAML::Mark& mark, absl::string_view path,
                     absl::string_view problem_and_allowed) const;

  // `node` must be a mapping (an empty value counts as an empty one) with
  // keys from `allowed`. `mark` locates the section when it is empty.
  absl::StatusOr<Section> OpenSection(
      const YAML::Node& node, const YAML::Mark& mark, std::string path,
      const std::vector<std::string>& allowed) const;
  absl::StatusOr<Section> OpenSection(
      const Field& field, const std::vector<std::string>& allowed) const {
    return OpenSection(field.node, field.mark(), field.path, allowed);
  }
  // Error for a required key that is absent from `section`.
  absl::Status Missing(const Section& section, absl::string_view key,
                       absl::string_view required) const;
  // Error for a key that is present but does not apply (e.g. beta1 with sgd).
  absl::Status NotApplicable(const Field& field, absl::string_view problem,
                             absl::string_view fix) const;

  absl::Status ReadString(const Field& f, absl::string_view allowed,
                          std::string* out) const;
  absl::Status ReadBool(const Field& f, bool* out) const;
  absl::Status ReadInt64(const Field& f, int64_t lo, int64_t hi,
                         absl::string_view allowed, int64_t* out) const;
  absl::Status ReadUint64(const Field& f, uint64_t* out) const;
  template <typename T>
  absl::Status ReadInt(const Field& f, int64_t lo, int64_t hi,
                       absl::string_view allowed, T* out) const {
    int64_t v = 0;
    RETURN_IF_ERROR(ReadInt64(f, lo, hi, allowed, &v));
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }
  absl::Status ReadFloat(const Field& f, const std::function<bool(double)>& ok,
                         absl::string_view allowed, float* out) const;
  template <typename E, size_t N>
  absl::Status ReadEnum(const Field& f, const EnumName<E> (&names)[N],
                        absl::string_view what, E* out) const;
  // Sequence elements as fields named "<path>[i]".
  absl::StatusOr<std::vector<Field>> ReadList(const Field& f,
                                              absl::string_view allowed) const;

  absl::Status ParseCluster(const Field& f, ClusterConfig* config) const;
  absl::Status ParseServerAddress(const Field& f, std::string* out) const;
  absl::Status ParseTls(const Field& f, TlsConfig* tls) const;
  absl::Status ParseServer(const Field& f, ServerOptions* server) const;
  absl::Status ParseClient(const Field& f, ClientConfig* client) const;
  absl::Status ParseTraining(const Field& f, TrainingConfig* training) const;
  absl::Status ParseTables(const Field& f,
                           std::vector<TableConfig>* tables) const;
  absl::Status ParseTable(const Field& f, TableConfig* table,
                          Field* name_field) const;
  absl::Status ParseInitializer(const Field& f, InitializerConfig* init) const;
  absl::Status ParseOptimizer(const Field& f, OptimizerConfig* opt) const;
  absl::Status CheckCrossSection(const Section& root,
                                 const ClusterConfig& config) const;

  const std::string source_;
};

absl::Status ConfigParser::Error(const YAML::Mark& mark, absl::string_view path,
                                 absl::string_view problem,
                                 absl::string_view allowed) const {
  return Error(mark, path, absl::StrCat(problem, "; ", allowed));
}

absl::Status ConfigParser::Error(const YAML::Mark& mark, absl::string_view path,
                                 absl::string_view problem_and_allowed) const {
  // yaml-cpp marks are 0-based; an empty document has no mark (-1).
  const int line = mark.is_null() ? 1 : mark.line + 1;
  const int column = mark.is_null() ? 1 : mark.column + 1;
  return absl::InvalidArgumentError(absl::StrCat(
      source_, ":", line, ":", column, ": ", path, ": ", problem_and_allowed));
}

absl::StatusOr<ConfigParser::Section> ConfigParser::OpenSection(
    const YAML::Node& node, const YAML::Mark& mark, std::string path,
    const std::vector<std::string>& allowed) const {
  Section section;
  section.path_ = std::move(path);
  section.mark_ = node.IsNull() ? mark : node.Mark();
  const std::string allowed_keys =
      absl::StrCat("allowed: ", absl::StrJoin(allowed, ", "));
  if (node.IsNull()) return section;
  if (!node.IsMap()) {
    return Error(section.mark_, section.path_,
                 absl::StrCat("expected a mapping, got ", Describe(node)),
                 allowed_keys);
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node& key = it->first;
    if (!key.IsScalar()) {
      return Error(key.Mark(), section.path_,
                   absl::StrCat("expected a key, got ", Describe(key)),
                   allowed_keys);
    }
    const std::string& name = key.Scalar();
    const std::string key_path = JoinPath(section.path_, name);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return Error(key.Mark(), key_path,
                   absl::StrCat("unknown key '", name, "'"), allowed_keys);
    }
    auto [pos, inserted] = section.index_.emplace(name, section.fields_.size());
    if (!inserted) {
      const YAML::Mark& first = section.fields_[pos->second].key_mark;
      return Error(key.Mark(), key_path,
                   absl::StrCat("duplicate key '", name, "' (first at line ",
                                first.line + 1, ")"),
                   "each key may appear once");
    }
    section.fields_.push_back(Field{key_path, it->second, key.Mark()});
  }
  return section;
}

absl::Status ConfigParser::Missing(const Section& section,
                                   absl::string_view key,
                                   absl::string_view required) const {
  return Error(section.mark(), JoinPath(section.path(), key),
               "missing required key", absl::StrCat("required: ", required));
}

absl::Status ConfigParser::NotApplicable(const Field& field,
                                         absl::string_view problem,
                                         absl::string_view fix) const {
  return Error(field.key_mark, field.path, problem, fix);
}

absl::Status ConfigParser::ReadString(const Field& f, absl::string_view allowed,
                                      std::string* out) const {
  const YAML::Node& n = f.node;
  bool ok = n.IsScalar();
  if (ok && IsPlainScalar(n)) {
    // An unquoted number or boolean where text is expected is almost always
    // a mistake (a port where a host:port belongs, "token: 123" meant as
    // a string); YAML types it as a number, so ask for quotes.
    double d = 0;
    const std::string& s = n.Scalar();
    ok = !(absl::SimpleAtod(s, &d) && std::isfinite(d)) && s != "true" &&
         s != "false" && s != "True" && s != "False" && s != "TRUE" &&
         s != "FALSE";
  }
  if (!ok) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a string, got ", Describe(n)),
                 absl::StrCat("allowed: ", allowed));
  }
  *out = n.Scalar();
  return absl::OkStatus();
}

absl::Status ConfigParser::ReadBool(const Field& f, bool* out) const {
  const YAML::Node& n = f.node;
  if (IsPlainScalar(n)) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
      return absl::OkStatus();
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
      return absl::OkStatus();
    }
  }
  return Error(f.mark(), f.path,
               absl::StrCat("expected a boolean, got ", Describe(n)),
               "allowed: true, false");
}

// Digits with an optional sign: used to tell "too large" from "not a number".
bool LooksLikeInteger(absl::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

absl::Status ConfigParser::ReadInt64(const Field& f, int64_t lo, int64_t hi,
                                     absl::string_view allowed,
                                     int64_t* out) const {
  const YAML::Node& n = f.node;
  int64_t v = 0;
  const std::string allowed_text = absl::StrCat("allowed: ", allowed);
  if (!IsPlainScalar(n) || !absl::SimpleAtoi(n.Scalar(), &v)) {
    if (IsPlainScalar(n) && LooksLikeInteger(n.Scalar())) {
      return Error(f.mark(), f.path,
                   absl::StrCat("value ", n.Scalar(), " out of range"),
                   allowed_text);
    }
    return Error(f.mark(), f.path,
                 absl::StrCat("expected an integer, got ", Describe(n)),
                 allowed_text);
  }
  if (v < lo || v > hi) {
    return Error(f.mark(), f.path,
                 absl::StrCat("value ", n.Scalar(), " out of range"),
                 allowed_text);
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ConfigParser::ReadUint64(const Field& f, uint64_t* out) const {
  const YAML::Node& n = f.node;
  constexpr absl::string_view kAllowed =
      "allowed: an integer in [0, 18446744073709551615]";
  if (!IsPlainScalar(n) || !absl::SimpleAtoi(n.Scalar(), out)) {
    if (IsPlainScalar(n) && LooksLikeInteger(n.Scalar())) {
      return Error(f.mark(), f.path,
                   absl::StrCat("value ", n.Scalar(), " out of range"),
                   kAllowed);
    }
    return Error(f.mark(), f.path,
                 absl::StrCat("expected an integer, got ", Describe(n)),
                 kAllowed);
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ReadFloat(const Field& f,
                                     const std::function<bool(double)>& ok,
                                     absl::string_view allowed,
                                     float* out) const {
  const YAML::Node& n = f.node;
  const std::string allowed_text = absl::StrCat("allowed: ", allowed);
  double v = 0;
  if (!IsPlainScalar(n) || !absl::SimpleAtod(n.Scalar(), &v) ||
      !std::isfinite(v)) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a number, got ", Describe(n)),
                 allowed_text);
  }
  if (std::fabs(v) > std::numeric_limits<float>::max() || !ok(v)) {
    return Error(f.mark(), f.path,
                 absl::StrCat("value ", n.Scalar(), " out of range"),
                 allowed_text);
  }
  *out = static_cast<float>(v);
  return absl::OkStatus();
}

template <typename E, size_t N>
absl::Status ConfigParser::ReadEnum(const Field& f,
                                    const EnumName<E> (&names)[N],
                                    absl::string_view what, E* out) const {
  const std::string all = AllNames(names);
  std::string text;
  RETURN_IF_ERROR(ReadString(f, all, &text));
  for (const EnumName<E>& n : names) {
    if (text == n.name) {
      *out = n.value;
      return absl::OkStatus();
    }
  }
  return Error(f.mark(), f.path,
               absl::StrCat("unknown ", what, " '", text, "'"),
               absl::StrCat("allowed: ", all));
}

absl::StatusOr<std::vector<Field>> ConfigParser::ReadList(
    const Field& f, absl::string_view allowed) const {
  if (!f.node.IsSequence()) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a list, got ", Describe(f.node)),
                 absl::StrCat("allowed: ", allowed));
  }
  std::vector<Field> items;
  for (size_t i = 0; i < f.node.size(); ++i) {
    const YAML::Node item = f.node[i];
    // An empty item ("- ") has no useful mark; point at the list instead.
    items.push_back(Field{absl::StrCat(f.path, "[", i, "]"), item,
                          item.IsNull() ? f.mark() : item.Mark()});
  }
  return items;
}

// ---------------------------------------------------------------------------
// Sections.

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
         (c >= '0' && c <= '9') || c == ':' || c == '.';
}

absl::Status ConfigParser::ParseServerAddress(const Field& f,
                                              std::string* out) const {
  constexpr absl::string_view kAllowed =
      "allowed: \"host:port\" with a DNS name or IPv4 address (or [IPv6]) and "
      "a port in [1, 65535]";
  std::string address;
  RETURN_IF_ERROR(ReadString(f, "a \"host:port\" string", &address));
  const size_t colon = address.rfind(':');
  auto bad = [&](absl::string_view why) {
    return Error(
        f.mark(), f.path,
        absl::StrCat("invalid server address '", address, "' (", why, ")"),
        kAllowed);
  };
  if (colon == std::string::npos) return bad("no port");
  const absl::string_view host = absl::string_view(address).substr(0, colon);
  const absl::string_view port = absl::string_view(address).substr(colon + 1);
  if (host.empty()) return bad("empty host");
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("bad IPv6 host");
    for (char c : host.substr(1, host.size() - 2)) {
      if (!IsIpv6Char(c)) return bad("bad IPv6 host");
    }
  } else {
    for (char c : host) {
      if (!IsHostChar(c)) {
        return bad(c == ':' ? "IPv6 hosts need brackets"
                            : "bad character in host");
      }
    }
  }
  int port_number = 0;
  if (port.empty() || !LooksLikeInteger(port) || port[0] == '+' ||
      port[0] == '-' || !absl::SimpleAtoi(port, &port_number) ||
      port_number < 1 || port_number > 65535) {
    return bad("bad port");
  }
  *out = std::move(address);
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseCluster(const Field& f,
                                        ClusterConfig* config) const {
  ASSIGN_OR_RETURN(Section s, OpenSection(f, {"servers", "num_workers"}));
  const Field* servers = s.Get("servers");
  if (servers == nullptr) {
    return Missing(s, "servers", "a non-empty list of \"host:port\" strings");
  }
  ASSIGN_OR_RETURN(
      std::vector<Field> items,
      ReadList(*servers, "a non-empty list of \"host:port\" strings"));
  if (items.empty()) {
    return Error(servers->mark(), servers->path, "no servers",
                 "allowed: a non-empty list of \"host:port\" strings");
  }
  config->servers.clear();
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string address;
    RETURN_IF_ERROR(ParseServerAddress(items[i], &address));
    auto [it, inserted] = seen.emplace(address, i);
    if (!inserted) {
      return Error(items[i].mark(), items[i].path,
                   absl::StrCat("duplicate server '", address, "' (also ",
                                servers->path, "[", it->second, "])"),
                   "each server address may appear once");
    }
    config->servers.push_back(std::move(address));
  }
  const Field* workers = s.Get("num_workers");
  if (workers == nullptr) return Missing(s, "num_workers", "an integer >= 1");
  return ReadInt(*workers, 1, 1 << 20, "an integer in [1, 1048576]",
                 &config->num_workers);
}

absl::Status ConfigParser::ParseTls(const Field& f, TlsConfig* tls) const {
  ASSIGN_OR_RETURN(
      Section s,
      OpenSection(f, {"enabled", "cert_file", "key_file", "ca_file",
                      "require_client_cert", "server_name_override"}));
  if (const Field* v = s.Get("enabled"))
    RETURN_IF_ERROR(ReadBool(*v, &tls->enabled));
  if (const Field* v = s.Get("cert_file")) {
    RETURN_IF_ERROR(
        ReadString(*v, "a path to a PEM certificate", &tls->cert_file));
  }
  if (const Field* v = s.Get("key_file")) {
    RETURN_IF_ERROR(
        ReadString(*v, "a path to a PEM private key", &tls->key_file));
  }
  if (const Field* v = s.Get("ca_file")) {
    RETURN_IF_ERROR(
        ReadString(*v, "a path to a PEM CA certificate", &tls->ca_file));
  }
  if (const Field* v = s.Get("require_client_cert")) {
    RETURN_IF_ERROR(ReadBool(*v, &tls->require_client_cert));
  }
  if (const Field* v = s.Get("server_name_override")) {
    RETURN_IF_ERROR(ReadString(*v, "a host name", &tls->server_name_override));
  }
  if (!tls->enabled) return absl::OkStatus();
  // Contradictions point at where the missing key belongs (the section).
  if (tls->cert_file.empty()) {
    return Error(
        s.mark(), JoinPath(s.path(), "cert_file"),
        "required when tls.enabled is true",
        "set tls.cert_file to a PEM certificate or set tls.enabled: false");
  }
  if (tls->key_file.empty()) {
    return Error(
        s.mark(), JoinPath(s.path(), "key_file"),
        "required when tls.enabled is true",
        "set tls.key_file to a PEM private key or set tls.enabled: false");
  }
  if (tls->require_client_cert && tls->ca_file.empty()) {
    return Error(s.mark(), JoinPath(s.path(), "ca_file"),
                 "required when tls.require_client_cert is true",
                 "set tls.ca_file to the CA that signs client certificates or "
                 "set tls.require_client_cert: false");
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseServer(const Field& f,
                                       ServerOptions* server) const {
  ASSIGN_OR_RETURN(
      Section s, OpenSection(f, {"device", "threads", "heartbeat_timeout_ms",
                                 "worker_join_timeout_ms", "reject_non_finite",
                                 "max_message_bytes", "checkpoint_dir",
                                 "checkpoint_interval_s", "metrics_port",
                                 "dedup_window"}));
  if (const Field* v = s.Get("device")) {
    RETURN_IF_ERROR(ReadEnum(*v, kDevices, "device", &server->device));
  }
  if (const Field* v = s.Get("threads")) {
    RETURN_IF_ERROR(
        ReadInt(*v, 1, 256, "an integer in [1, 256]", &server->threads));
  }
  if (const Field* v = s.Get("heartbeat_timeout_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &server->heartbeat_timeout_ms));
  }
  if (const Field* v = s.Get("worker_join_timeout_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &server->worker_join_timeout_ms));
  }
  if (const Field* v = s.Get("reject_non_finite")) {
    RETURN_IF_ERROR(ReadBool(*v, &server->reject_non_finite));
  }
  if (const Field* v = s.Get("max_message_bytes")) {
    RETURN_IF_ERROR(ReadInt(*v, kMinMessageBytes, kMaxMessageBytes,
                            "an integer in [65536, 2147483647]",
                            &server->max_message_bytes));
  }
  if (const Field* v = s.Get("checkpoint_dir")) {
    RETURN_IF_ERROR(ReadString(*v, "a directory path (\"\" = no checkpoints)",
                               &server->checkpoint_dir));
  }
  if (const Field* v = s.Get("checkpoint_interval_s")) {
    RETURN_IF_ERROR(ReadInt(*v, 0, kInt64Max,
                            "an integer >= 0 (0 = on demand only)",
                            &server->checkpoint_interval_s));
    if (server->checkpoint_interval_s > 0 && server->checkpoint_dir.empty()) {
      return Error(v->mark(), v->path, "periodic checkpoints need a directory",
                   "set server.checkpoint_dir or set checkpoint_interval_s: 0");
    }
  }
  if (const Field* v = s.Get("metrics_port")) {
    RETURN_IF_ERROR(ReadInt(
        *v, -1, 65535, "an integer in [-1, 65535] (-1 = off, 0 = any port)",
        &server->metrics_port));
  }
  if (const Field* v = s.Get("dedup_window")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, 1 << 24, "an integer in [1, 16777216]",
                            &server->dedup_window));
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseClient(const Field& f,
                                       ClientConfig* client) const {
  ASSIGN_OR_RETURN(
      Section s,
      OpenSection(f, {"chunk_bytes", "rpc_timeout_ms", "heartbeat_interval_ms",
                      "reconnect_initial_backoff_ms",
                      "reconnect_max_backoff_ms", "max_reconnect_attempts",
                      "keepalive_ms", "keepalive_timeout_ms"}));
  if (const Field* v = s.Get("chunk_bytes")) {
    RETURN_IF_ERROR(ReadInt(*v, kMinChunkBytes, kMaxChunkBytes,
                            "an integer in [4096, 67108864] (4 KiB to 64 MiB)",
                            &client->chunk_bytes));
  }
  if (const Field* v = s.Get("rpc_timeout_ms")) {
    RETURN_IF_ERROR(
        ReadInt(*v, 1, kInt64Max, "an integer > 0", &client->rpc_timeout_ms));
  }
  if (const Field* v = s.Get("heartbeat_interval_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &client->heartbeat_interval_ms));
  }
  if (const Field* v = s.Get("reconnect_initial_backoff_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &client->reconnect_initial_backoff_ms));
  }
  if (const Field* v = s.Get("reconnect_max_backoff_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &client->reconnect_max_backoff_ms));
  }
  if (client->reconnect_max_backoff_ms < client->reconnect_initial_backoff_ms) {
    const Field* v = s.Get("reconnect_max_backoff_ms");
    if (v == nullptr) v = s.Get("reconnect_initial_backoff_ms");
    return Error(v->mark(), v->path,
                 absl::StrCat("reconnect_max_backoff_ms (",
                              client->reconnect_max_backoff_ms,
                              ") is below reconnect_initial_backoff_ms (",
                              client->reconnect_initial_backoff_ms, ")"),
                 "make client.reconnect_max_backoff_ms >= "
                 "client.reconnect_initial_backoff_ms");
  }
  if (const Field* v = s.Get("max_reconnect_attempts")) {
    RETURN_IF_ERROR(ReadInt(*v, 0, kInt64Max, "an integer >= 0",
                            &client->max_reconnect_attempts));
  }
  if (const Field* v = s.Get("keepalive_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 0, kInt64Max, "0 (off) or an integer >= 1000",
                            &client->keepalive_ms));
    if (client->keepalive_ms > 0 && client->keepalive_ms < kMinKeepaliveMs) {
      return Error(v->mark(), v->path,
                   absl::StrCat("keepalive_ms ", client->keepalive_ms,
                                " is below ", kMinKeepaliveMs,
                                " (servers refuse pings more often than that)"),
                   "set client.keepalive_ms to 0 (off) or to 1000 or more");
    }
  }
  if (const Field* v = s.Get("keepalive_timeout_ms")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, kInt64Max, "an integer > 0",
                            &client->keepalive_timeout_ms));
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseTraining(const Field& f,
                                         TrainingConfig* training) const {
  ASSIGN_OR_RETURN(
      Section s,
      OpenSection(f, {"model", "hidden", "dataset", "data_dir", "train_file",
                      "test_file", "batch_size", "epochs", "lr_decay",
                      "eval_every_steps", "seed", "device"}));
  if (const Field* v = s.Get("model")) {
    std::string model;
    RETURN_IF_ERROR(ReadString(*v, "softmax, mlp", &model));
    if (model != "softmax" && model != "mlp") {
      return Error(v->mark(), v->path,
                   absl::StrCat("unknown model '", model, "'"),
                   "allowed: softmax, mlp");
    }
    training->model = model;
  }
  if (const Field* v = s.Get("hidden")) {
    if (training->model != "mlp") {
      return NotApplicable(*v, "only used by model mlp",
                           "remove training.hidden or set training.model: mlp");
    }
    constexpr absl::string_view kAllowed =
        "a non-empty list of layer widths in [1, 1048576]";
    ASSIGN_OR_RETURN(std::vector<Field> items, ReadList(*v, kAllowed));
    if (items.empty()) {
      return Error(v->mark(), v->path, "an mlp needs at least one hidden layer",
                   absl::StrCat("allowed: ", kAllowed));
    }
    training->hidden.clear();
    for (const Field& item : items) {
      int width = 0;
      RETURN_IF_ERROR(
          ReadInt(item, 1, kMaxHidden, "an integer in [1, 1048576]", &width));
      training->hidden.push_back(width);
    }
  }
  if (const Field* v = s.Get("dataset")) {
    std::string dataset;
    RETURN_IF_ERROR(ReadString(*v, "fashion_mnist, libsvm", &dataset));
    if (dataset != "fashion_mnist" && dataset != "libsvm") {
      return Error(v->mark(), v->path,
                   absl::StrCat("unknown dataset '", dataset, "'"),
                   "allowed: fashion_mnist, libsvm");
    }
    training->dataset = dataset;
  }
  if (const Field* v = s.Get("data_dir")) {
    RETURN_IF_ERROR(ReadString(*v, "a directory path", &training->data_dir));
  }
  for (const char* key : {"train_file", "test_file"}) {
    const Field* v = s.Get(key);
    if (v == nullptr) continue;
    if (training->dataset != "libsvm") {
      return NotApplicable(*v, "only used by dataset libsvm",
                           absl::StrCat("remove training.", key,
                                        " or set training.dataset: libsvm"));
    }
    std::string* out = std::string(key) == "train_file" ? &training->train_file
                                                        : &training->test_file;
    RETURN_IF_ERROR(ReadString(*v, "a path to a LIBSVM text file", out));
  }
  if (training->dataset == "libsvm" && training->train_file.empty()) {
    return Error(s.mark(), JoinPath(s.path(), "train_file"),
                 "required when training.dataset is libsvm",
                 "set training.train_file to a LIBSVM text file");
  }
  if (const Field* v = s.Get("batch_size")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, 1 << 24, "an integer in [1, 16777216]",
                            &training->batch_size));
  }
  if (const Field* v = s.Get("epochs")) {
    RETURN_IF_ERROR(ReadInt(*v, 1, 1 << 24, "an integer in [1, 16777216]",
                            &training->epochs));
  }
  if (const Field* v = s.Get("lr_decay")) {
    RETURN_IF_ERROR(ReadFloat(
        *v, [](double x) { return x > 0 && x <= 1; }, "a number in (0, 1]",
        &training->lr_decay));
  }
  if (const Field* v = s.Get("eval_every_steps")) {
    RETURN_IF_ERROR(ReadInt(*v, 0, std::numeric_limits<int>::max(),
                            "an integer >= 0 (0 = only at the end)",
                            &training->eval_every_steps));
  }
  if (const Field* v = s.Get("seed"))
    RETURN_IF_ERROR(ReadUint64(*v, &training->seed));
  if (const Field* v = s.Get("device")) {
    RETURN_IF_ERROR(ReadEnum(*v, kDevices, "device", &training->device));
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseInitializer(const Field& f,
                                            InitializerConfig* init) const {
  ASSIGN_OR_RETURN(Section s, OpenSection(f, {"type", "value", "low", "high",
                                              "mean", "stddev", "seed"}));
  if (const Field* v = s.Get("type")) {
    RETURN_IF_ERROR(ReadEnum(*v, kInitializers, "initializer", &init->type));
  }
  const char* const type_name = NameOf(kInitializers, init->type);
  // Which keys each type reads; a key for another type is a mistake (e.g.
  // "stddev" under "type: uniform" suggests the wrong type was chosen).
  struct KeyUse {
    const char* key;
    InitializerType type1;
    InitializerType type2;
    const char* types;
  };
  constexpr KeyUse kUses[] = {
      {"value", InitializerType::kConstant, InitializerType::kConstant,
       "constant"},
      {"low", InitializerType::kUniform, InitializerType::kUniform, "uniform"},
      {"high", InitializerType::kUniform, InitializerType::kUniform, "uniform"},
      {"mean", InitializerType::kNormal, InitializerType::kNormal, "normal"},
      {"stddev", InitializerType::kNormal, InitializerType::kNormal, "normal"},
      {"seed", InitializerType::kUniform, InitializerType::kNormal,
       "uniform or normal"},
  };
  for (const KeyUse& use : kUses) {
    const Field* v = s.Get(use.key);
    if (v == nullptr || init->type == use.type1 || init->type == use.type2) {
      continue;
    }
    return NotApplicable(
        *v, absl::StrCat("not used by initializer ", type_name),
        absl::StrCat("remove ", use.key, " or set type: ", use.types));
  }
  auto any = [](double) { return true; };
  if (const Field* v = s.Get("value")) {
    RETURN_IF_ERROR(ReadFloat(*v, any, "a number", &init->value));
  }
  if (const Field* v = s.Get("low"))
    RETURN_IF_ERROR(ReadFloat(*v, any, "a number", &init->low));
  if (const Field* v = s.Get("high")) {
    RETURN_IF_ERROR(ReadFloat(*v, any, "a number", &init->high));
  }
  if (init->type == InitializerType::kUniform && !(init->low < init->high)) {
    const Field* v = s.Get("high");
    if (v == nullptr) v = s.Get("low");
    return Error(v->mark(), v->path,
                 absl::StrCat("empty range: low (", init->low,
                              ") must be below high (", init->high, ")"),
                 "set initializer.low < initializer.high");
  }
  if (const Field* v = s.Get("mean")) {
    RETURN_IF_ERROR(ReadFloat(*v, any, "a number", &init->mean));
  }
  if (const Field* v = s.Get("stddev")) {
    RETURN_IF_ERROR(ReadFloat(
        *v, [](double x) { return x > 0; }, "a number > 0", &init->stddev));
  }
  if (const Field* v = s.Get("seed"))
    RETURN_IF_ERROR(ReadUint64(*v, &init->seed));
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseOptimizer(const Field& f,
                                          OptimizerConfig* opt) const {
  ASSIGN_OR_RETURN(
      Section s,
      OpenSection(
          f, {"type", "learning_rate", "momentum", "nesterov", "beta1", "beta2",
              "epsilon", "weight_decay", "clip_value", "initial_accumulator"}));
  if (const Field* v = s.Get("type")) {
    RETURN_IF_ERROR(ReadEnum(*v, kOptimizers, "optimizer", &opt->type));
  }
  const char* const type_name = NameOf(kOptimizers, opt->type);
  struct KeyUse {
    const char* key;
    OptimizerType type1;
    OptimizerType type2;
    const char* types;
  };
  // A key read by another optimizer only is a mistake (e.g. "momentum: 0.9"
  // under "type: sgd" would silently train without momentum).
  constexpr KeyUse kUses[] = {
      {"momentum", OptimizerType::kMomentum, OptimizerType::kMomentum,
       "momentum"},
      {"nesterov", OptimizerType::kMomentum, OptimizerType::kMomentum,
       "momentum"},
      {"beta1", OptimizerType::kAdam, OptimizerType::kAdam, "adam"},
      {"beta2", OptimizerType::kAdam, OptimizerType::kAdam, "adam"},
      {"epsilon", OptimizerType::kAdagrad, OptimizerType::kAdam,
       "adagrad or adam"},
      {"initial_accumulator", OptimizerType::kAdagrad, OptimizerType::kAdagrad,
       "adagrad"},
  };
  for (const KeyUse& use : kUses) {
    const Field* v = s.Get(use.key);
    if (v == nullptr || opt->type == use.type1 || opt->type == use.type2)
      continue;
    return NotApplicable(
        *v, absl::StrCat("not used by optimizer ", type_name),
        absl::StrCat("remove ", use.key, " or set type: ", use.types));
  }
  auto positive = [](double x) { return x > 0; };
  auto non_negative = [](double x) { return x >= 0; };
  auto unit = [](double x) { return x >= 0 && x < 1; };
  if (const Field* v = s.Get("learning_rate")) {
    RETURN_IF_ERROR(
        ReadFloat(*v, positive, "a number > 0", &opt->learning_rate));
  }
  if (const Field* v = s.Get("momentum")) {
    RETURN_IF_ERROR(ReadFloat(*v, unit, "a number in [0, 1)", &opt->momentum));
  }
  if (const Field* v = s.Get("nesterov"))
    RETURN_IF_ERROR(ReadBool(*v, &opt->nesterov));
  if (const Field* v = s.Get("beta1")) {
    RETURN_IF_ERROR(ReadFloat(*v, unit, "a number in [0, 1)", &opt->beta1));
  }
  if (const Field* v = s.Get("beta2")) {
    RETURN_IF_ERROR(ReadFloat(*v, unit, "a number in [0, 1)", &opt->beta2));
  }
  if (const Field* v = s.Get("epsilon")) {
    RETURN_IF_ERROR(ReadFloat(*v, positive, "a number > 0", &opt->epsilon));
  } else if (opt->type == OptimizerType::kAdagrad) {
    opt->epsilon = 1e-10f;
  }
  if (const Field* v = s.Get("weight_decay")) {
    RETURN_IF_ERROR(
        ReadFloat(*v, non_negative, "a number >= 0", &opt->weight_decay));
  }
  if (const Field* v = s.Get("clip_value")) {
    RETURN_IF_ERROR(ReadFloat(*v, non_negative, "a number >= 0 (0 = off)",
                              &opt->clip_value));
  }
  if (const Field* v = s.Get("initial_accumulator")) {
    RETURN_IF_ERROR(ReadFloat(*v, non_negative, "a number >= 0",
                              &opt->initial_accumulator));
  }
  return absl::OkStatus();
}

bool IsTableNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

absl::Status ConfigParser::ParseTable(const Field& f, TableConfig* table,
                                      Field* name_field) const {
  ASSIGN_OR_RETURN(Section s,
                   OpenSection(f, {"name", "kind", "size", "dim", "consistency",
                                   "staleness", "initializer", "optimizer"}));
  const Field* name = s.Get("name");
  if (name == nullptr) {
    return Missing(s, "name", "a unique table name");
  }
  constexpr absl::string_view kNameAllowed =
      "allowed: 1 to 128 characters from A-Z a-z 0-9 _ - .";
  *name_field = *name;
  RETURN_IF_ERROR(ReadString(*name, "a table name", &table->name));
  if (table->name.empty() || table->name.size() > kMaxTableNameLength ||
      !std::all_of(table->name.begin(), table->name.end(), IsTableNameChar)) {
    return Error(name->mark(), name->path,
                 absl::StrCat("invalid table name '", table->name, "'"),
                 kNameAllowed);
  }
  if (const Field* v = s.Get("kind")) {
    RETURN_IF_ERROR(ReadEnum(*v, kTableKinds, "table kind", &table->kind));
  }
  const Field* size = s.Get("size");
  const Field* dim = s.Get("dim");
  if (table->kind == TableKind::kDense) {
    if (dim != nullptr) {
      return NotApplicable(
          *dim, "not allowed for a dense table",
          "remove dim (dense tables use size) or set kind: sparse");
    }
    if (size == nullptr) {
      return Missing(s, "size", "an integer > 0 (number of float elements)");
    }
    RETURN_IF_ERROR(ReadInt(*size, 1, kMaxDenseSize,
                            "an integer in [1, 281474976710656]",
                            &table->size));
  } else {
    if (size != nullptr) {
      return NotApplicable(
          *size, "not allowed for a sparse table",
          "remove size (sparse tables use dim) or set kind: dense");
    }
    if (dim == nullptr) return Missing(s, "dim", "an integer > 0 (row width)");
    RETURN_IF_ERROR(ReadInt(*dim, 1, kMaxSparseDim,
                            "an integer in [1, 1048576]", &table->dim));
  }
  if (const Field* v = s.Get("consistency")) {
    RETURN_IF_ERROR(
        ReadEnum(*v, kConsistencies, "consistency", &table->consistency));
  }
  const Field* staleness = s.Get("staleness");
  if (table->consistency == Consistency::kSsp) {
    if (staleness == nullptr) {
      return Missing(
          s, "staleness",
          "an integer >= 0 with consistency ssp (the staleness bound)");
    }
    RETURN_IF_ERROR(ReadInt(*staleness, 0, kMaxStaleness,
                            "an integer in [0, 1000000]", &table->staleness));
  } else if (staleness != nullptr) {
    return NotApplicable(*staleness,
                         absl::StrCat("only used with consistency ssp, not ",
                                      ConsistencyName(table->consistency)),
                         "remove staleness or set consistency: ssp");
  }
  if (const Field* v = s.Get("initializer")) {
    RETURN_IF_ERROR(ParseInitializer(*v, &table->initializer));
  }
  if (const Field* v = s.Get("optimizer")) {
    RETURN_IF_ERROR(ParseOptimizer(*v, &table->optimizer));
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::ParseTables(const Field& f,
                                       std::vector<TableConfig>* tables) const {
  constexpr absl::string_view kAllowed = "a non-empty list of table mappings";
  ASSIGN_OR_RETURN(std::vector<Field> items, ReadList(f, kAllowed));
  if (items.empty()) {
    return Error(f.mark(), f.path, "no tables",
                 absl::StrCat("allowed: ", kAllowed));
  }
  tables->clear();
  absl::flat_hash_map<std::string, size_t> names;
  for (size_t i = 0; i < items.size(); ++i) {
    TableConfig table;
    table.table_id = static_cast<uint32_t>(i);
    Field name;
    RETURN_IF_ERROR(ParseTable(items[i], &table, &name));
    auto [it, inserted] = names.emplace(table.name, i);
    if (!inserted) {
      return Error(name.mark(), name.path,
                   absl::StrCat("duplicate table name '", table.name,
                                "' (also ", f.path, "[", it->second, "])"),
                   "table names must be unique");
    }
    tables->push_back(std::move(table));
  }
  return absl::OkStatus();
}

absl::Status ConfigParser::CheckCrossSection(
    const Section& root, const ClusterConfig& config) const {
  // The field `key` of section `section`, when the file sets it.
  auto field_in = [&](const char* section,
                      const char* key) -> std::optional<Field> {
    const Field* sec = root.Get(section);
    if (sec == nullptr || !sec->node.IsMap()) return std::nullopt;
    for (auto it = sec->node.begin(); it != sec->node.end(); ++it) {
      if (it->first.Scalar() == key) {
        return Field{JoinPath(sec->path, key), it->second, it->first.Mark()};
      }
    }
    return std::nullopt;
  };
  if (config.client.heartbeat_interval_ms >=
      config.server.heartbeat_timeout_ms) {
    std::optional<Field> v = field_in("client", "heartbeat_interval_ms");
    if (!v) v = field_in("server", "heartbeat_timeout_ms");
    return Error(v->mark(), v->path,
                 absl::StrCat("client.heartbeat_interval_ms (",
                              config.client.heartbeat_interval_ms,
                              ") must be below server.heartbeat_timeout_ms (",
                              config.server.heartbeat_timeout_ms,
                              "), or live workers get evicted"),
                 "lower client.heartbeat_interval_ms or raise "
                 "server.heartbeat_timeout_ms");
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterConfig> ConfigParser::Parse(
    const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports syntax errors by exception; this is the only place
    // one can escape, and it becomes a status here.
    return Error(e.mark, "YAML syntax error", e.msg);
  }
  ClusterConfig config;
  config.source_path = source_;
  const std::vector<std::string> kTopKeys = {
      "cluster", "log_level", "auth_token", "tls",
      "server",  "client",    "training",   "tables"};
  if (root.IsNull()) {
    return Error(root.Mark(), "<root>", "the config is empty",
                 "required keys: cluster, tables");
  }
  if (!root.IsMap()) {
    return Error(root.Mark(), "<root>",
                 absl::StrCat("expected a mapping, got ", Describe(root)),
                 absl::StrCat("allowed keys: ", absl::StrJoin(kTopKeys, ", ")));
  }
  ASSIGN_OR_RETURN(Section s, OpenSection(root, root.Mark(), "", kTopKeys));
  const Field* cluster = s.Get("cluster");
  if (cluster == nullptr) {
    return Error(s.mark(), "cluster", "missing required key",
                 "required: a mapping with servers and num_workers");
  }
  RETURN_IF_ERROR(ParseCluster(*cluster, &config));
  if (const Field* v = s.Get("log_level")) {
    RETURN_IF_ERROR(ReadString(*v, AllowedLogLevels(), &config.log_level));
    const absl::Status valid = ValidateLogLevel(config.log_level);
    if (!valid.ok()) return Error(v->mark(), v->path, valid.message());
  }
  if (const Field* v = s.Get("auth_token")) {
    RETURN_IF_ERROR(
        ReadString(*v, "a string (\"\" = no token)", &config.auth_token));
  }
  if (const Field* v = s.Get("tls")) RETURN_IF_ERROR(ParseTls(*v, &config.tls));
  if (const Field* v = s.Get("server"))
    RETURN_IF_ERROR(ParseServer(*v, &config.server));
  if (const Field* v = s.Get("client"))
    RETURN_IF_ERROR(ParseClient(*v, &config.client));
  if (const Field* v = s.Get("training")) {
    RETURN_IF_ERROR(ParseTraining(*v, &config.training));
  }
  const Field* tables = s.Get("tables");
  if (tables == nullptr) {
    return Error(s.mark(), "tables", "missing required key",
                 "required: a non-empty list of table mappings");
  }
  RETURN_IF_ERROR(ParseTables(*tables, &config.tables));
  RETURN_IF_ERROR(CheckCrossSection(s, config));
  return config;
}

}  // namespace

const TableConfig* ClusterConfig::FindTable(const std::string& name) const {
  for (const TableConfig& table : tables) {
    if (table.name == name) return &table;
  }
  return nullptr;
}

absl::StatusOr<ClusterConfig> ParseClusterConfig(
    const std::string& yaml_text, const std::string& source_name) {
  return ConfigParser(source_name).Parse(yaml_text);
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

const char* TableKindName(TableKind kind) { return NameOf(kTableKinds, kind); }
const char* ConsistencyName(Consistency consistency) {
  return NameOf(kConsistencies, consistency);
}
const char* OptimizerTypeName(OptimizerType type) {
  return NameOf(kOptimizers, type);
}
const char* InitializerTypeName(InitializerType type) {
  return NameOf(kInitializers, type);
}
const char* DeviceKindName(DeviceKind kind) { return NameOf(kDevices, kind); }

}  // namespace ps
