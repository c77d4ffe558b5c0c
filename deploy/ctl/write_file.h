// Writing the files ps_ctl produces (rendered manifests, a config with a
// token) so that a reader never sees a partial one.
#ifndef PS_DEPLOY_CTL_WRITE_FILE_H_
#define PS_DEPLOY_CTL_WRITE_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"

namespace ps::ctl {

// Writes `content` to `path` through "<path>.tmp" (created with `mode`),
// fsync and rename. INTERNAL naming the path and errno text on failure (the
// temporary file is removed).
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& content, mode_t mode);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_WRITE_FILE_H_
