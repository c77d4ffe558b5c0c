#include "deploy/launcher/launch_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace ps::launcher {

absl::StatusOr<std::string> MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(base != nullptr && *base ? base : "/tmp",
                                  "/ps_launch_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("mkdtemp ", tmpl, ": ", std::strerror(errno)));
  }
  return tmpl;
}

void RemoveTempDir(const std::string& dir, int num_server_processes) {
  for (int i = 0; i < num_server_processes; ++i) {
    unlink(absl::StrCat(dir, "/port_", i).c_str());
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir + "/checkpoints", ignored);
  std::filesystem::remove_all(dir + "/etcd", ignored);
  unlink((dir + "/etcd.log").c_str());
  unlink((dir + "/cluster.servers.yaml").c_str());
  unlink((dir + "/cluster.yaml").c_str());
  rmdir(dir.c_str());
}

absl::Status MakeDirs(const std::string& path) {
  std::string prefix;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      prefix = path.substr(0, i);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::InternalError(
            absl::StrCat("mkdir ", prefix, ": ", std::strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status WriteTextFile(const std::string& path,
                           const std::string& contents) {
  std::ofstream out(path, std::ios::trunc);
  out << contents;
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ps::launcher
