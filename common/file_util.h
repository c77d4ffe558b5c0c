// Small file helpers shared by the daemons and tools.
#ifndef PS_COMMON_FILE_UTIL_H_
#define PS_COMMON_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ps {

// The whole content of the file at `path`. NOT_FOUND "cannot read <what>
// '<path>'" when it cannot be opened; `what` names the file for the reader
// (e.g. "tls.ca_file").
absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             absl::string_view what = "file");

}  // namespace ps

#endif  // PS_COMMON_FILE_UTIL_H_
