#include "deploy/launcher/protocol_line.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ps::launcher {
namespace {

constexpr const char* kKinds[] = {"START", "PROGRESS", "EVAL", "FINAL",
                                  "DONE"};

}  // namespace

std::optional<double> ProtocolLine::Number(const std::string& key) const {
  auto it = fields.find(key);
  double v = 0;
  if (it == fields.end() || !absl::SimpleAtod(it->second, &v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<ProtocolLine> ParseProtocolLine(const std::string& line) {
  std::vector<std::string> tokens =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (tokens.empty()) return std::nullopt;
  if (std::find(std::begin(kKinds), std::end(kKinds), tokens[0]) ==
      std::end(kKinds)) {
    return std::nullopt;
  }
  ProtocolLine out;
  out.kind = tokens[0];
  std::string* last = nullptr;
  for (size_t i = 1; i < tokens.size(); ++i) {
    const size_t eq = tokens[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      if (last == nullptr) return std::nullopt;
      absl::StrAppend(last, " ", tokens[i]);
      continue;
    }
    last = &out.fields[tokens[i].substr(0, eq)];
    *last = tokens[i].substr(eq + 1);
  }
  return out;
}

}  // namespace ps::launcher
