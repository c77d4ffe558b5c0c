#include "common/file_util.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ps {

absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path, "'"));
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace ps
