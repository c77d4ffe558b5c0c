#include "server/checkpoint_set.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
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

// Why shard `j` (holding `held`) cannot contribute its part of `id`, or ""
// when it can.
std::string PartProblem(const ShardCheckpoints& held, uint32_t j,
                        uint64_t id) {
  if (!held.unseen.empty()) return absl::StrCat("shard ", j, ": ", held.unseen);
  auto it = held.parts.find(id);
  if (it == held.parts.end()) {
    return absl::StrCat("shard ", j, " has no part of it (no ", held.dir, "/",
                        CheckpointFileName(id), ")");
  }
  if (!it->second.empty()) {
    return absl::StrCat("shard ", j, "'s part is unusable: ", it->second);
  }
  return "";
}

// A part written for another cluster layout is an error of the config, not
// of the file: FAILED_PRECONDITION, and nothing is renamed.
absl::Status CheckLayout(const std::string& path, const ShardState& state,
                         uint32_t shard, uint32_t num_shards,
                         uint64_t fingerprint) {
  if (state.shard_index == shard && state.num_shards == num_shards &&
      state.partition_fingerprint == fingerprint) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "checkpoint ", path, " belongs to shard ", state.shard_index, " of ",
      state.num_shards, " with partition fingerprint ",
      absl::Hex(state.partition_fingerprint), ", but this cluster has ",
      num_shards, " shards with partition fingerprint ",
      absl::Hex(fingerprint),
      " (the cluster config's servers or tables changed); refusing to "
      "start. Use the config the checkpoint was written with, or move the "
      "checkpoint directory away to start from scratch"));
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

std::string PartPath(const ShardCheckpoints& held, uint64_t id) {
  return absl::StrCat(held.dir, "/", CheckpointFileName(id));
}

// Every shard's directory under `root`, its parts listed by name (usable
// until verified).
absl::StatusOr<std::vector<ShardCheckpoints>> ListClusterFiles(
    const std::string& root, uint32_t num_shards) {
  std::vector<ShardCheckpoints> all(num_shards);
  for (uint32_t j = 0; j < num_shards; ++j) {
    all[j].dir = ShardCheckpointDir(root, j, num_shards);
    if (!DirectoryExists(all[j].dir)) {
      all[j].unseen = absl::StrCat(
          "its directory ", all[j].dir,
          " does not exist (checkpoint_dir must be one directory shared by "
          "every server, or set server.checkpoint_agreement: peers)");
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<CheckpointFile> listed,
                     ListCheckpoints(all[j].dir));
    for (const CheckpointFile& f : listed) all[j].parts[f.seq] = "";
  }
  return all;
}

}  // namespace

absl::StatusOr<CommonCheckpoint> ChooseCommonCheckpoint(
    const std::vector<ShardCheckpoints>& shards, const std::string& where,
    const std::string& move_away) {
  std::set<uint64_t, std::greater<uint64_t>> ids;  // newest first
  for (const ShardCheckpoints& held : shards) {
    for (const auto& [id, problem] : held.parts) ids.insert(id);
  }
  CommonCheckpoint choice;
  for (uint64_t id : ids) {
    std::vector<std::string> problems;
    for (uint32_t j = 0; j < shards.size(); ++j) {
      if (std::string why = PartProblem(shards[j], j, id); !why.empty()) {
        problems.push_back(std::move(why));
      }
    }
    if (problems.empty()) {
      choice.id = id;
      return choice;
    }
    choice.incomplete.emplace_back(id, absl::StrJoin(problems, "; "));
  }
  if (ids.empty()) return choice;
  return absl::FailedPreconditionError(absl::StrCat(
      "no checkpoint id ", where, " is complete on every shard; the newest, ",
      choice.incomplete.front().first, ": ", choice.incomplete.front().second,
      ". Refusing to serve a model mixed from different times. Fix: put "
      "back the missing or damaged part, or start every server with "
      "--allow_inconsistent_restore (each shard restores its own newest "
      "valid checkpoint), or ",
      move_away, " to start from the initial values"));
}

uint64_t CommonPruneThreshold(const std::vector<ShardCheckpoints>& shards,
                              int keep) {
  std::vector<uint64_t> common;  // newest first
  if (shards.empty()) return 0;
  for (auto it = shards[0].parts.rbegin(); it != shards[0].parts.rend();
       ++it) {
    bool everywhere = true;
    for (uint32_t j = 0; j < shards.size() && everywhere; ++j) {
      everywhere = PartProblem(shards[j], j, it->first).empty();
    }
    if (everywhere) common.push_back(it->first);
  }
  if (common.empty()) return 0;
  const size_t index =
      std::min(common.size(), static_cast<size_t>(std::max(keep, 1))) - 1;
  return common[index];
}

absl::StatusOr<ClusterCheckpointChoice> ChooseClusterCheckpoint(
    const std::string& root, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint) {
  ASSIGN_OR_RETURN(std::vector<ShardCheckpoints> all,
                   ListClusterFiles(root, num_shards));
  ClusterCheckpointChoice choice;
  std::vector<std::set<uint64_t>> verified(num_shards);
  // Each round verifies the chosen id's parts; a damaged one is marked and
  // the rule runs again, so only candidates are read, newest first.
  while (true) {
    ASSIGN_OR_RETURN(
        CommonCheckpoint common,
        ChooseCommonCheckpoint(all, absl::StrCat("under ", root),
                               absl::StrCat("move ", root, " away")));
    if (common.id == 0) return choice;
    bool complete = true;
    for (uint32_t j = 0; j < num_shards; ++j) {
      if (verified[j].count(common.id) > 0) continue;
      const std::string path = PartPath(all[j], common.id);
      absl::StatusOr<ShardState> read = ReadCheckpointFile(path);
      if (!read.ok()) {
        complete = false;
        all[j].parts[common.id] = std::string(read.status().message());
        // Only a shard's own damaged files are renamed (by that shard).
        if (j == shard) {
          SetAside(path, ".corrupt",
                   absl::StrCat("shard ", j, "'s part is unusable: ",
                                read.status().message()));
        }
        continue;
      }
      RETURN_IF_ERROR(CheckLayout(path, *read, j, num_shards, fingerprint));
      verified[j].insert(common.id);
      if (j == shard) choice.state = *std::move(read);
    }
    if (!complete) continue;
    for (const auto& [id, why] : common.incomplete) {
      spdlog::warn("cluster checkpoint {} is not complete: {}", id, why);
    }
    choice.id = common.id;
    choice.path = PartPath(all[shard], common.id);
    // This shard's newer parts go aside: ".corrupt" when damaged (as the
    // peers mode's verification would name them), else ".unmatched".
    ShardCheckpoints& own = all[shard];
    for (auto it = own.parts.upper_bound(common.id); it != own.parts.end();
         ++it) {
      if (!it->second.empty()) continue;
      const std::string path = PartPath(own, it->first);
      if (absl::StatusOr<ShardState> read = ReadCheckpointFile(path);
          !read.ok()) {
        it->second = std::string(read.status().message());
        SetAside(path, ".corrupt",
                 absl::StrCat("shard ", shard, "'s part is unusable: ",
                              it->second));
      }
    }
    SetAsideNewerThan(common.id, &own);
    return choice;
  }
}

absl::StatusOr<ShardCheckpoints> VerifyOwnCheckpoints(
    const std::string& shard_dir, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint) {
  ShardCheckpoints own;
  own.dir = shard_dir;
  ASSIGN_OR_RETURN(std::vector<CheckpointFile> listed,
                   ListCheckpoints(shard_dir));
  for (const CheckpointFile& f : listed) {
    absl::StatusOr<ShardState> read = ReadCheckpointFile(f.path);
    if (!read.ok()) {
      own.parts[f.seq] = std::string(read.status().message());
      SetAside(f.path, ".corrupt",
               absl::StrCat("shard ", shard, "'s part is unusable: ",
                            read.status().message()));
      continue;
    }
    RETURN_IF_ERROR(CheckLayout(f.path, *read, shard, num_shards, fingerprint));
    own.parts[f.seq] = "";
  }
  return own;
}

void SetAsideNewerThan(uint64_t id, ShardCheckpoints* own) {
  for (auto it = own->parts.upper_bound(id); it != own->parts.end();) {
    // A damaged part was renamed ".corrupt" already; it stays listed with
    // why, so that peers asking later get the same account.
    if (!it->second.empty()) {
      ++it;
      continue;
    }
    SetAside(PartPath(*own, it->first), ".unmatched",
             absl::StrCat("newer than cluster checkpoint ", id,
                          ", the newest complete on every shard"));
    it = own->parts.erase(it);
  }
}

uint64_t PruneThreshold(const std::string& root, uint32_t num_shards,
                        int keep) {
  absl::StatusOr<std::vector<ShardCheckpoints>> all =
      ListClusterFiles(root, num_shards);
  return all.ok() ? CommonPruneThreshold(*all, keep) : 0;
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

}  // namespace ps
