#include "deploy/ctl/write_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ps::ctl {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(errno)));
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Errno("create", tmp);
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n =
        ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status status = Errno("write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return status;
    }
    written += static_cast<size_t>(n);
  }
  // The mode of an existing file is not changed by open(); make it `mode`.
  if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) {
    absl::Status status = Errno("sync", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return status;
  }
  if (::close(fd) != 0) {
    absl::Status status = Errno("close", tmp);
    ::unlink(tmp.c_str());
    return status;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status = Errno("rename to", path);
    ::unlink(tmp.c_str());
    return status;
  }
  return absl::OkStatus();
}

}  // namespace ps::ctl
