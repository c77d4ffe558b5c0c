// The launcher's files on disk: its temporary directory (effective configs,
// port files, and server checkpoints when the launcher chose their
// directory), the output directory, text files.
#ifndef PS_DEPLOY_LAUNCHER_LAUNCH_FILES_H_
#define PS_DEPLOY_LAUNCHER_LAUNCH_FILES_H_

#include <string>

#include "absl/status/statusor.h"

namespace ps::launcher {

// Creates $TMPDIR/ps_launch_XXXXXX (/tmp when $TMPDIR is unset or empty).
// INTERNAL naming the path when mkdtemp fails.
absl::StatusOr<std::string> MakeTempDir();

// Removes the files the launcher wrote into `dir` (and the servers'
// checkpoints under <dir>/checkpoints, when the launcher put them there, and
// its etcd's <dir>/etcd and <dir>/etcd.log), then `dir`. Anything else in
// `dir` stays, and so does `dir` then.
void RemoveTempDir(const std::string& dir, int num_server_processes);

// mkdir -p. INTERNAL naming the directory that could not be made.
absl::Status MakeDirs(const std::string& path);

// Writes `contents` to `path` (truncating). INTERNAL with the path on error.
absl::Status WriteTextFile(const std::string& path, const std::string& contents);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_LAUNCH_FILES_H_
