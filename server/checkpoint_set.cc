#include "server/checkpoint_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/checkpoint_file.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

bool DirectoryExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Every shard's checkpoint files: ids -> path, by shard.
struct ClusterFiles {
  std::vector<std::string> dirs;
  std::vector<bool> visible;  // the directory exists
  std::vector<std::map<uint64_t, std::string>> files;
  std::set<uint64_t, std::greater<uint64_t>> ids;  // union, newest first
};

absl::StatusOr<ClusterFiles> ListClusterFiles(const std::string& root,
                                              uint32_t num_shards) {
  ClusterFiles all;
  for (uint32_t j = 0; j < num_shards; ++j) {
    all.dirs.push_back(ShardCheckpointDir(root, j, num_shards));
    all.visible.push_back(DirectoryExists(all.dirs.back()));
    ASSIGN_OR_RETURN(std::vector<CheckpointFile> listed,
                     ListCheckpoints(all.dirs.back()));
    all.files.emplace_back();
    for (const CheckpointFile& f : listed) {
      all.files.back()[f.seq] = f.path;
      all.ids.insert(f.seq);
    }
  }
  return all;
}

struct PartCheck {
  enum Kind { kOk, kMissing, kDamaged } kind = kOk;
  std::string why;  // "shard <j> ..." when not kOk
};

// Whether shard `j`'s part of `id` can be used (then its decoded state is in
// *state). A part written for another cluster layout is an error of the
// config, not of the file: FAILED_PRECONDITION, and nothing is renamed.
absl::StatusOr<PartCheck> CheckPart(const ClusterFiles& all, uint32_t j,
                                    uint64_t id, uint32_t num_shards,
                                    uint64_t fingerprint, ShardState* state) {
  if (!all.visible[j]) {
    return PartCheck{PartCheck::kMissing,
                     absl::StrCat("shard ", j, ": its directory ", all.dirs[j],
                                  " does not exist (checkpoint_dir must be "
                                  "one directory shared by every server)")};
  }
  auto it = all.files[j].find(id);
  if (it == all.files[j].end()) {
    return PartCheck{PartCheck::kMissing,
                     absl::StrCat("shard ", j, " has no part of it (no ",
                                  all.dirs[j], "/ckpt-", id, ".bin)")};
  }
  absl::StatusOr<ShardState> read = ReadCheckpointFile(it->second);
  if (!read.ok()) {
    return PartCheck{PartCheck::kDamaged,
                     absl::StrCat("shard ", j, "'s part is unusable: ",
                                  read.status().message())};
  }
  if (read->shard_index != j || read->num_shards != num_shards ||
      read->partition_fingerprint != fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", it->second, " belongs to shard ", read->shard_index,
        " of ", read->num_shards, " with partition fingerprint ",
        absl::Hex(read->partition_fingerprint), ", but this cluster has ",
        num_shards, " shards with partition fingerprint ",
        absl::Hex(fingerprint),
        " (the cluster config's servers or tables changed); refusing to "
        "start. Use the config the checkpoint was written with, or move the "
        "checkpoint directory away to start from scratch"));
  }
  *state = *std::move(read);
  return PartCheck{};
}

// Renames `path` to `path + suffix`, logging what happened either way.
void SetAside(const std::string& path, const std::string& suffix,
              const std::string& why) {
  const std::string to = path + suffix;
  if (std::rename(path.c_str(), to.c_str()) == 0) {
    spdlog::error("checkpoint {}: {}; renamed to {}", path, why, to);
  } else {
    spdlog::error("checkpoint {}: {}; renaming it to {} failed: {} (left in "
                  "place)",
                  path, why, to, std::strerror(errno));
  }
}

}  // namespace

absl::StatusOr<ClusterCheckpointChoice> ChooseClusterCheckpoint(
    const std::string& root, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint) {
  ASSIGN_OR_RETURN(ClusterFiles all, ListClusterFiles(root, num_shards));
  ClusterCheckpointChoice choice;
  if (all.ids.empty()) return choice;
  std::string newest_problems;  // of the newest id, for the refusal
  for (uint64_t id : all.ids) {
    std::vector<std::string> problems;
    ShardState own;
    for (uint32_t j = 0; j < num_shards; ++j) {
      ShardState state;
      ASSIGN_OR_RETURN(const PartCheck check,
                       CheckPart(all, j, id, num_shards, fingerprint, &state));
      if (check.kind == PartCheck::kOk) {
        if (j == shard) own = std::move(state);
        continue;
      }
      problems.push_back(check.why);
      // Only a shard's own damaged files are renamed (by that shard).
      if (j == shard && check.kind == PartCheck::kDamaged) {
        SetAside(all.files[j][id], ".corrupt", check.why);
        all.files[j].erase(id);
      }
    }
    if (problems.empty()) {
      choice.id = id;
      choice.path = all.files[shard][id];
      choice.state = std::move(own);
      break;
    }
    const std::string summary = absl::StrJoin(problems, "; ");
    if (newest_problems.empty()) newest_problems = summary;
    spdlog::warn("cluster checkpoint {} is not complete: {}", id, summary);
  }
  if (choice.id == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no checkpoint id under ", root, " is complete on every shard; the "
        "newest, ", *all.ids.begin(), ": ", newest_problems,
        ". Refusing to serve a model mixed from different times. Fix: put "
        "back the missing or damaged part, or start every server with "
        "--allow_inconsistent_restore (each shard restores its own newest "
        "valid checkpoint), or move ", root,
        " away to start from the initial values"));
  }
  for (const auto& [id, path] : all.files[shard]) {
    if (id > choice.id) {
      SetAside(path, ".unmatched",
               absl::StrCat("newer than cluster checkpoint ", choice.id,
                            ", the newest complete on every shard"));
    }
  }
  return choice;
}

absl::Status MarkShardStarted(const std::string& root, uint32_t shard,
                              uint32_t num_shards) {
  const std::string dir = ShardCheckpointDir(root, shard, num_shards);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("creating ", dir, ": ", error.message()));
  }
  const std::string marker = dir + "/.started";
  std::FILE* f = std::fopen(marker.c_str(), "w");
  if (f == nullptr || std::fclose(f) != 0) {
    return absl::InternalError(
        absl::StrCat("creating ", marker, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::vector<uint32_t> ShardsNeverStarted(const std::string& root,
                                         uint32_t num_shards) {
  std::vector<uint32_t> missing;
  for (uint32_t j = 0; j < num_shards; ++j) {
    struct stat st;
    const std::string marker =
        ShardCheckpointDir(root, j, num_shards) + "/.started";
    if (stat(marker.c_str(), &st) != 0) missing.push_back(j);
  }
  return missing;
}

uint64_t PruneThreshold(const std::string& root, uint32_t num_shards,
                        int keep) {
  absl::StatusOr<ClusterFiles> all = ListClusterFiles(root, num_shards);
  if (!all.ok()) return 0;
  std::vector<uint64_t> common;  // newest first
  for (uint64_t id : all->ids) {
    bool everywhere = true;
    for (uint32_t j = 0; j < num_shards && everywhere; ++j) {
      everywhere = all->files[j].count(id) > 0;
    }
    if (everywhere) common.push_back(id);
  }
  if (common.empty()) return 0;
  const size_t index =
      std::min(common.size(), static_cast<size_t>(std::max(keep, 1))) - 1;
  return common[index];
}

}  // namespace ps
