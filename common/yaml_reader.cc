#include "common/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ps {
namespace {

// True for scalars written without quotes or an explicit tag: only those are
// numbers / booleans in YAML; '"5"' is a string.
bool IsPlainScalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() == "?";
}

bool IsBooleanWord(const std::string& s) {
  return s == "true" || s == "false" || s == "True" || s == "False" ||
         s == "TRUE" || s == "FALSE";
}

// Digits with an optional sign: used to tell "too large" from "not a number".
bool LooksLikeInteger(absl::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string JoinKeyPath(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

std::string DescribeYaml(const YAML::Node& node) {
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

absl::StatusOr<YAML::Node> YamlReader::Load(const std::string& text) const {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports syntax errors by exception; this is the only place
    // one can escape, and it becomes a status here.
    return Error(e.mark, "YAML syntax error", e.msg);
  }
}

absl::Status YamlReader::Error(const YAML::Mark& mark, absl::string_view path,
                               absl::string_view problem,
                               absl::string_view allowed) const {
  return Error(mark, path, absl::StrCat(problem, "; ", allowed));
}

absl::Status YamlReader::Error(const YAML::Mark& mark, absl::string_view path,
                               absl::string_view problem_and_allowed) const {
  // yaml-cpp marks are 0-based; an empty document has no mark (-1).
  const int line = mark.is_null() ? 1 : mark.line + 1;
  const int column = mark.is_null() ? 1 : mark.column + 1;
  return absl::InvalidArgumentError(absl::StrCat(
      source_, ":", line, ":", column, ": ", path, ": ", problem_and_allowed));
}

absl::Status YamlReader::Missing(const YamlSection& section,
                                 absl::string_view key,
                                 absl::string_view required) const {
  return Error(section.mark(), JoinKeyPath(section.path(), key),
               "missing required key", absl::StrCat("required: ", required));
}

absl::Status YamlReader::NotApplicable(const YamlField& field,
                                       absl::string_view problem,
                                       absl::string_view fix) const {
  return Error(field.key_mark, field.path, problem, fix);
}

absl::StatusOr<YamlSection> YamlReader::OpenSection(
    const YAML::Node& node, const YAML::Mark& mark, std::string path,
    const std::vector<std::string>& allowed) const {
  YamlSection section;
  section.path_ = std::move(path);
  section.mark_ = node.IsNull() ? mark : node.Mark();
  const std::string allowed_keys =
      absl::StrCat("allowed: ", absl::StrJoin(allowed, ", "));
  if (node.IsNull()) return section;
  if (!node.IsMap()) {
    return Error(section.mark_, section.path_,
                 absl::StrCat("expected a mapping, got ", DescribeYaml(node)),
                 allowed_keys);
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node& key = it->first;
    if (!key.IsScalar()) {
      return Error(key.Mark(), section.path_,
                   absl::StrCat("expected a key, got ", DescribeYaml(key)),
                   allowed_keys);
    }
    const std::string& name = key.Scalar();
    const std::string key_path = JoinKeyPath(section.path_, name);
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
    section.fields_.push_back(YamlField{key_path, it->second, key.Mark()});
  }
  return section;
}

absl::Status YamlReader::ReadString(const YamlField& f,
                                    absl::string_view allowed,
                                    std::string* out) const {
  const YAML::Node& n = f.node;
  bool ok = n.IsScalar();
  if (ok && IsPlainScalar(n)) {
    // An unquoted number or boolean where text is expected is almost always
    // a mistake (a port where a host:port belongs, "token: 123" meant as
    // a string); YAML types it as a number, so ask for quotes.
    double d = 0;
    const std::string& s = n.Scalar();
    ok = !(absl::SimpleAtod(s, &d) && std::isfinite(d)) && !IsBooleanWord(s);
  }
  if (!ok) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a string, got ", DescribeYaml(n)),
                 absl::StrCat("allowed: ", allowed));
  }
  *out = n.Scalar();
  return absl::OkStatus();
}

absl::Status YamlReader::ReadBool(const YamlField& f, bool* out) const {
  const YAML::Node& n = f.node;
  if (IsPlainScalar(n) && IsBooleanWord(n.Scalar())) {
    const char first = n.Scalar()[0];
    *out = first == 't' || first == 'T';
    return absl::OkStatus();
  }
  return Error(f.mark(), f.path,
               absl::StrCat("expected a boolean, got ", DescribeYaml(n)),
               "allowed: true, false");
}

absl::Status YamlReader::ReadInt64(const YamlField& f, int64_t lo, int64_t hi,
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
                 absl::StrCat("expected an integer, got ", DescribeYaml(n)),
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

absl::Status YamlReader::ReadUint64(const YamlField& f, uint64_t* out) const {
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
                 absl::StrCat("expected an integer, got ", DescribeYaml(n)),
                 kAllowed);
  }
  return absl::OkStatus();
}

absl::Status YamlReader::ReadFloat(const YamlField& f,
                                   const std::function<bool(double)>& ok,
                                   absl::string_view allowed,
                                   float* out) const {
  const YAML::Node& n = f.node;
  const std::string allowed_text = absl::StrCat("allowed: ", allowed);
  double v = 0;
  if (!IsPlainScalar(n) || !absl::SimpleAtod(n.Scalar(), &v) ||
      !std::isfinite(v)) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a number, got ", DescribeYaml(n)),
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

absl::Status YamlReader::ReadName(const YamlField& f,
                                  const std::vector<std::string>& names,
                                  absl::string_view what,
                                  std::string* out) const {
  const std::string all = absl::StrJoin(names, ", ");
  std::string text;
  if (absl::Status s = ReadString(f, all, &text); !s.ok()) return s;
  if (std::find(names.begin(), names.end(), text) == names.end()) {
    return Error(f.mark(), f.path, absl::StrCat("unknown ", what, " '", text, "'"),
                 absl::StrCat("allowed: ", all));
  }
  *out = std::move(text);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<YamlField>> YamlReader::ReadList(
    const YamlField& f, absl::string_view allowed) const {
  if (!f.node.IsSequence()) {
    return Error(f.mark(), f.path,
                 absl::StrCat("expected a list, got ", DescribeYaml(f.node)),
                 absl::StrCat("allowed: ", allowed));
  }
  std::vector<YamlField> items;
  for (size_t i = 0; i < f.node.size(); ++i) {
    const YAML::Node item = f.node[i];
    // An empty item ("- ") has no useful mark; point at the list instead.
    items.push_back(YamlField{absl::StrCat(f.path, "[", i, "]"), item,
                              item.IsNull() ? f.mark() : item.Mark()});
  }
  return items;
}

}  // namespace ps
