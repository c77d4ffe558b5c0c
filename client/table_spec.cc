#include "client/table_spec.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace ps {

TableInfo ToTableInfo(const TableConfig& table) {
  TableInfo info;
  info.name = table.name;
  info.table_id = table.table_id;
  info.kind = table.kind;
  info.size = table.size;
  info.dim = table.dim;
  info.consistency = table.consistency;
  info.staleness = table.staleness;
  return info;
}

std::vector<std::string> DescribeTableDifferences(
    absl::Span<const TableConfig> expected, const std::string& expected_label,
    absl::Span<const TableConfig> actual, const std::string& actual_label,
    bool allow_extra) {
  std::map<uint32_t, const TableConfig*> by_id;
  for (const TableConfig& t : actual) by_id[t.table_id] = &t;
  std::vector<std::string> diffs;
  auto differ = [&](const TableConfig& e, const char* field,
                    const std::string& mine, const std::string& theirs) {
    diffs.push_back(absl::StrCat("table ", e.table_id, " '", e.name, "': ",
                                 field, " ", mine, " (", expected_label,
                                 ") vs ", theirs, " (", actual_label, ")"));
  };
  for (const TableConfig& e : expected) {
    auto it = by_id.find(e.table_id);
    if (it == by_id.end()) {
      diffs.push_back(absl::StrCat("table ", e.table_id, " '", e.name,
                                   "' is missing on ", actual_label));
      continue;
    }
    const TableConfig& a = *it->second;
    by_id.erase(it);
    if (e.name != a.name) differ(e, "name", e.name, a.name);
    if (e.kind != a.kind) {
      differ(e, "kind", TableKindName(e.kind), TableKindName(a.kind));
      continue;  // size / dim mean different things
    }
    if (e.kind == TableKind::kDense && e.size != a.size) {
      differ(e, "size", absl::StrCat(e.size), absl::StrCat(a.size));
    }
    if (e.kind == TableKind::kSparse && e.dim != a.dim) {
      differ(e, "dim", absl::StrCat(e.dim), absl::StrCat(a.dim));
    }
    if (e.consistency != a.consistency) {
      differ(e, "consistency", ConsistencyName(e.consistency),
             ConsistencyName(a.consistency));
    } else if (e.consistency == Consistency::kSsp &&
               e.staleness != a.staleness) {
      differ(e, "staleness", absl::StrCat(e.staleness),
             absl::StrCat(a.staleness));
    }
  }
  if (!allow_extra) {
    for (const auto& [id, a] : by_id) {
      diffs.push_back(absl::StrCat("table ", id, " '", a->name,
                                   "' exists only on ", actual_label));
    }
  }
  return diffs;
}

}  // namespace ps
