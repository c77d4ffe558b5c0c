// Generic, schema-free reading of YAML values with precise error messages.
//
// Every error is INVALID_ARGUMENT with the message
//   "<source>:<line>:<column>: <key path>: <problem>; <what is allowed>"
// (1-based line and column of the offending value, or of its key when the
// value is empty). The schema that says which keys exist and what they mean
// lives with the structs it fills (config_schema.h builds on this).
//
// Thread safety: a YamlReader is immutable after construction; Sections and
// Fields are plain values.
#ifndef PS_COMMON_YAML_READER_H_
#define PS_COMMON_YAML_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace ps {

// "parent.key", or "key" at the top level.
std::string JoinKeyPath(absl::string_view parent, absl::string_view key);

// One key: value of a mapping (or one item of a list, path "list[i]").
struct YamlField {
  std::string path;  // e.g. "tables[0].optimizer.type"
  YAML::Node node;   // the value
  YAML::Mark key_mark;

  // Where a message about the value points. An empty value ("key:" with
  // nothing after it) gets a mark on the following line, so use the key's.
  YAML::Mark mark() const { return node.IsNull() ? key_mark : node.Mark(); }
};

// A mapping whose keys were checked against an allowed list: all known, none
// repeated. Fields keep file order.
class YamlSection {
 public:
  const std::string& path() const { return path_; }
  const YAML::Mark& mark() const { return mark_; }
  // The field for `key`, or nullptr when absent.
  const YamlField* Get(absl::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &fields_[it->second];
  }
  const std::vector<YamlField>& fields() const { return fields_; }

 private:
  friend class YamlReader;
  std::string path_;
  YAML::Mark mark_;
  std::vector<YamlField> fields_;
  absl::flat_hash_map<std::string, size_t> index_;
};

class YamlReader {
 public:
  // `source` names the file in messages.
  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  // Parses `text`; a syntax error becomes an error status pointing at it.
  absl::StatusOr<YAML::Node> Load(const std::string& text) const;

  absl::Status Error(const YAML::Mark& mark, absl::string_view path,
                     absl::string_view problem, absl::string_view allowed) const;
  absl::Status Error(const YAML::Mark& mark, absl::string_view path,
                     absl::string_view problem_and_allowed) const;
  // "missing required key; required: <required>" at the section.
  absl::Status Missing(const YamlSection& section, absl::string_view key,
                       absl::string_view required) const;
  // A key that is present but does not apply (e.g. beta1 with sgd), at the
  // key: "<problem>; <fix>".
  absl::Status NotApplicable(const YamlField& field, absl::string_view problem,
                             absl::string_view fix) const;

  // `node` must be a mapping (an empty value counts as an empty one) with
  // keys from `allowed`. `mark` locates the section when it is empty.
  absl::StatusOr<YamlSection> OpenSection(
      const YAML::Node& node, const YAML::Mark& mark, std::string path,
      const std::vector<std::string>& allowed) const;
  absl::StatusOr<YamlSection> OpenSection(
      const YamlField& field, const std::vector<std::string>& allowed) const {
    return OpenSection(field.node, field.mark(), field.path, allowed);
  }

  // Typed reads. `allowed` completes the "allowed: ..." part of a message.
  // A string must be a scalar that YAML would not type as a number or a
  // boolean (quote it otherwise).
  absl::Status ReadString(const YamlField& f, absl::string_view allowed,
                          std::string* out) const;
  absl::Status ReadBool(const YamlField& f, bool* out) const;
  // An integer in [lo, hi].
  absl::Status ReadInt64(const YamlField& f, int64_t lo, int64_t hi,
                         absl::string_view allowed, int64_t* out) const;
  absl::Status ReadUint64(const YamlField& f, uint64_t* out) const;
  // A finite number representable as float for which ok(value) holds.
  absl::Status ReadFloat(const YamlField& f,
                         const std::function<bool(double)>& ok,
                         absl::string_view allowed, float* out) const;
  // One of `names` (the message calls it "<what>").
  absl::Status ReadName(const YamlField& f,
                        const std::vector<std::string>& names,
                        absl::string_view what, std::string* out) const;
  // Sequence elements as fields named "<path>[i]".
  absl::StatusOr<std::vector<YamlField>> ReadList(
      const YamlField& f, absl::string_view allowed) const;

 private:
  const std::string source_;
};

// How a value is named in "expected X, got Y" messages.
std::string DescribeYaml(const YAML::Node& node);

}  // namespace ps

#endif  // PS_COMMON_YAML_READER_H_
