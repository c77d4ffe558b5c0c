#include "server/checkpoint_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "server/checkpoint_format.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

constexpr char kPrefix[] = "ckpt-";
constexpr char kSuffix[] = ".bin";

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes to a file descriptor, retrying short writes; the first error
// sticks and later writes are dropped.
class FdSink final : public CheckpointSink {
 public:
  FdSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  void Write(const char* data, size_t n) override {
    size_t done = 0;
    while (status_.ok() && done < n) {
      const ssize_t w = write(fd_, data + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        status_ = absl::InternalError(
            absl::StrCat("writing ", path_, ": ", ErrnoText(errno)));
        break;
      }
      done += static_cast<size_t>(w);
    }
  }
  const absl::Status& status() const { return status_; }

 private:
  const int fd_;
  const std::string path_;
  absl::Status status_;
};

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open checkpoint ", path));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path,
                                            ": read error"));
  }
  return std::move(content).str();
}

absl::Status FsyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("opening directory ", dir, ": ", ErrnoText(errno)));
  }
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("fsync of directory ", dir, ": ", ErrnoText(err)));
  }
  return absl::OkStatus();
}

// mkdir -p.
absl::Status MakeDirectories(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::InternalError(
          absl::StrCat("creating directory ", partial, ": ", ErrnoText(errno)));
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InternalError(
        absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string CheckpointFileName(uint64_t id) {
  return absl::StrFormat("%s%012d%s", kPrefix, id, kSuffix);
}

std::string ShardCheckpointDir(const std::string& root, uint32_t shard,
                               uint32_t num_shards) {
  return absl::StrCat(root, "/shard-", shard, "-of-", num_shards);
}

absl::StatusOr<std::vector<CheckpointFile>> ListCheckpoints(
    const std::string& shard_dir) {
  std::vector<CheckpointFile> files;
  DIR* dir = opendir(shard_dir.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return files;
    return absl::InternalError(
        absl::StrCat("listing ", shard_dir, ": ", ErrnoText(errno)));
  }
  while (struct dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (!absl::StartsWith(name, kPrefix) || !absl::EndsWith(name, kSuffix)) {
      continue;
    }
    const std::string digits = name.substr(
        sizeof(kPrefix) - 1, name.size() - (sizeof(kPrefix) - 1) -
                                 (sizeof(kSuffix) - 1));
    uint64_t seq = 0;
    if (digits.empty() || !absl::SimpleAtoi(digits, &seq) || seq == 0) continue;
    files.push_back({seq, absl::StrCat(shard_dir, "/", name)});
  }
  closedir(dir);
  std::sort(files.begin(), files.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) {
              return a.seq > b.seq;
            });
  return files;
}

absl::StatusOr<CheckpointInfo> WriteCheckpointFile(const std::string& shard_dir,
                                                   uint64_t seq,
                                                   const ShardState& state) {
  const absl::Time start = absl::Now();
  RETURN_IF_ERROR(MakeDirectories(shard_dir));
  const std::string path = absl::StrCat(shard_dir, "/", CheckpointFileName(seq));
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                      0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("creating ", tmp, ": ", ErrnoText(errno)));
  }
  FdSink sink(fd, tmp);
  const uint64_t file_size =
      EncodeCheckpoint(state, seq, absl::ToUnixMillis(start), &sink);
  absl::Status status = sink.status();
  if (status.ok() && fsync(fd) != 0) {
    status = absl::InternalError(
        absl::StrCat("fsync of ", tmp, ": ", ErrnoText(errno)));
  }
  if (close(fd) != 0 && status.ok()) {
    status = absl::InternalError(
        absl::StrCat("closing ", tmp, ": ", ErrnoText(errno)));
  }
  if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::InternalError(absl::StrCat("renaming ", tmp, " to ", path,
                                              ": ", ErrnoText(errno)));
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return status;
  }
  RETURN_IF_ERROR(FsyncDirectory(shard_dir));
  CheckpointInfo info;
  info.path = path;
  info.seq = seq;
  info.bytes = file_size;
  info.duration = absl::Now() - start;
  return info;
}

absl::StatusOr<ShardState> ReadCheckpointFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(path));
  absl::StatusOr<ShardState> state = DecodeCheckpoint(data);
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        absl::StrCat("checkpoint ", path, ": ",
                                     state.status().message()));
  }
  return state;
}

void RemoveIncompleteCheckpoints(const std::string& shard_dir) {
  DIR* dir = opendir(shard_dir.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (struct dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (absl::StartsWith(name, kPrefix) && absl::EndsWith(name, ".tmp")) {
      stale.push_back(absl::StrCat(shard_dir, "/", name));
    }
  }
  closedir(dir);
  for (const std::string& path : stale) {
    spdlog::warn("removing {}: a checkpoint that was never completed", path);
    unlink(path.c_str());
  }
}

absl::StatusOr<std::string> QuarantineCheckpoint(const std::string& path) {
  const std::string quarantine = path + ".corrupt";
  if (std::rename(path.c_str(), quarantine.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("renaming ", path, " to ",
                                            quarantine, " failed: ",
                                            ErrnoText(errno)));
  }
  return quarantine;
}

absl::Status CheckCheckpointDirectory(const std::string& dir) {
  const auto unusable = [&dir](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint directory ", dir, " is not usable: ", why,
        "; fix: make server.checkpoint_dir a writable directory (or a path "
        "where one can be created), or remove server.checkpoint_dir to run "
        "without checkpoints"));
  };
  if (absl::Status made = MakeDirectories(dir); !made.ok()) {
    return unusable(std::string(made.message()));
  }
  const std::string probe =
      absl::StrCat(dir, "/.write-probe.", static_cast<long>(getpid()));
  const int fd =
      open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return unusable(absl::StrCat("creating ", probe, ": ", ErrnoText(errno)));
  }
  const char byte = 0;
  std::string error;
  if (write(fd, &byte, 1) != 1) {
    error = absl::StrCat("writing ", probe, ": ", ErrnoText(errno));
  } else if (fsync(fd) != 0) {
    error = absl::StrCat("fsync of ", probe, ": ", ErrnoText(errno));
  }
  close(fd);
  unlink(probe.c_str());
  if (!error.empty()) return unusable(error);
  return absl::OkStatus();
}

void PruneCheckpoints(const std::string& shard_dir, int keep,
                      uint64_t below_id) {
  absl::StatusOr<std::vector<CheckpointFile>> files =
      ListCheckpoints(shard_dir);
  if (!files.ok()) {
    spdlog::warn("not pruning old checkpoints: {}", files.status().ToString());
    return;
  }
  const size_t kept = static_cast<size_t>(std::max(keep, 1));
  for (size_t i = kept; i < files->size(); ++i) {
    if ((*files)[i].seq >= below_id) continue;
    if (unlink((*files)[i].path.c_str()) != 0) {
      spdlog::warn("cannot remove old checkpoint {}: {}", (*files)[i].path,
                   ErrnoText(errno));
    }
  }
}

}  // namespace ps
