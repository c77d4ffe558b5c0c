// Checkpoint files and restore: exact round trips of every optimizer's state
// (dense and sparse, async and sync), versions, steps, worker clocks and
// dedup windows; damaged files detected with the right message; the newest
// valid checkpoint chosen; a foreign checkpoint refused.
#include "server/checkpointer.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/backend/update_backend.h"
#include "common/bytes.h"
#include "common/optimizers/optimizer_registry.h"
#include "common/partition.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/checkpoint_file.h"
#include "server/executor.h"
#include "server/shard.h"
#include "server/worker_registry.h"

namespace ps {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kClient = 0xC11E47;

std::string TempDir() {
  const char* root = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(root != nullptr ? root : "/tmp",
                                  "/ckpt_test_XXXXXX");
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TableConfig Table(const std::string& name, uint32_t id, TableKind kind,
                  const std::string& opt, Consistency consistency) {
  TableConfig t;
  t.name = name;
  t.table_id = id;
  t.kind = kind;
  if (kind == TableKind::kDense) {
    t.size = 9;
  } else {
    t.dim = 3;
  }
  t.consistency = consistency;
  t.initializer.type = InitializerType::kUniform;
  t.initializer.low = -1.0f;
  t.initializer.high = 1.0f;
  t.initializer.seed = 5 + id;
  t.optimizer.type = opt;
  t.optimizer.learning_rate = 0.1f;
  if (opt == "momentum") {
    t.optimizer.params = {{"momentum", 0.9f},
                          {"nesterov", (id % 2) == 0 ? 1.0f : 0.0f}};
  } else if (opt == "adagrad" || opt == "ftrl") {
    t.optimizer.params = {{"initial_accumulator", 0.1f}};
  }
  t.optimizer.weight_decay = 0.01f;
  return t;
}

ClusterConfig TestConfig() {
  ClusterConfig config;
  config.servers = {"127.0.0.1:1", "127.0.0.1:2"};
  config.num_workers = 2;
  config.server.heartbeat_timeout_ms = 600000;
  config.server.worker_join_timeout_ms = 600000;
  uint32_t id = 0;
  auto add_tables = [&](const std::vector<std::string>& opts) {
    for (Consistency c : {Consistency::kAsync, Consistency::kSync}) {
      for (TableKind kind : {TableKind::kDense, TableKind::kSparse}) {
        for (const std::string& opt : opts) {
          config.tables.push_back(
              Table(absl::StrCat("t", id), id, kind, opt, c));
          ++id;
        }
      }
    }
  };
  add_tables({"sgd", "momentum", "adagrad", "adam"});  // tables 0-15
  // Then every other registered optimizer (state of any number of slots
  // round-trips).
  std::vector<std::string> others;
  for (const std::string& name : OptimizerNames()) {
    if (name != "sgd" && name != "momentum" && name != "adagrad" &&
        name != "adam") {
      others.push_back(name);
    }
  }
  add_tables(others);
  return config;
}

// Sparse ids owned by shard 0 of 2.
std::vector<uint64_t> OwnedIds(int n, uint64_t start) {
  std::vector<uint64_t> ids;
  for (uint64_t id = start; static_cast<int>(ids.size()) < n; ++id) {
    if (SparseShardOf(id, 2) == 0) ids.push_back(id);
  }
  return ids;
}

class CheckpointTest : public ::testing::Test {
 protected:
  CheckpointTest() : executor_(2), config_(TestConfig()) {}

  std::unique_ptr<Shard> NewShard() {
    auto shard = Shard::Create(config_, 0, CreateCpuUpdateBackend(), &executor_);
    EXPECT_TRUE(shard.ok()) << shard.status();
    return std::move(shard).value();
  }

  uint64_t Fingerprint() const {
    return PartitionFingerprint(2, config_.tables);
  }

  proto::DataRequest Request(const TableConfig& t, proto::Op op, int worker,
                             int64_t clock, float scale) {
    proto::DataRequest r;
    r.set_request_id(next_request_id_++);
    r.set_client_id(kClient);
    r.set_op(op);
    r.set_table_id(t.table_id);
    r.set_worker_id(worker);
    r.set_clock(clock);
    r.set_first_chunk(true);
    uint64_t n;
    if (t.kind == TableKind::kDense) {
      const Range owned = DenseShardRange(t.size, 0, 2);
      r.set_offset(owned.begin);
      r.set_length(owned.size());
      n = owned.size();
    } else {
      const std::vector<uint64_t> ids = OwnedIds(4, 100 + t.table_id);
      r.set_keys(EncodeRaw<uint64_t>(ids));
      n = ids.size() * t.dim;
    }
    if (op != proto::PULL) {
      std::vector<float> grad(n);
      for (uint64_t i = 0; i < n; ++i) {
        grad[i] = scale * (0.5f + 0.25f * i - 0.1f * t.table_id);
      }
      r.set_values(EncodeRaw<float>(grad));
    }
    return r;
  }

  static proto::DataResponse Execute(Shard* shard, const proto::DataRequest& r) {
    proto::DataResponse response;
    ShardTable* table = shard->FindTableForTesting(r.table_id());
    EXPECT_NE(table, nullptr);
    EXPECT_TRUE(table->Validate(r).ok()) << table->Validate(r);
    absl::Status s = table->Execute(r, &response);
    EXPECT_TRUE(s.ok()) << s;
    return response;
  }

  static void ClockAll(Shard* shard, int64_t clock) {
    for (int w = 0; w < 2; ++w) {
      absl::Notification done;
      shard->Clock(w, clock, [&](absl::StatusOr<int64_t> r) {
        EXPECT_TRUE(r.ok()) << r.status();
        done.Notify();
      });
      done.WaitForNotification();
    }
  }

  // Runs `rounds` training rounds on every table: async tables take two
  // pushes per round, sync tables one push per worker and a clock.
  void Train(Shard* shard, int rounds, int64_t* clock) {
    for (int round = 0; round < rounds; ++round) {
      for (const TableConfig& t : config_.tables) {
        if (t.consistency == Consistency::kAsync) {
          Execute(shard, Request(t, proto::PUSH, 0, 0, 1.0f + round));
          Execute(shard, Request(t, proto::PUSH, -1, 0, -0.5f));
        } else {
          Execute(shard, Request(t, proto::PUSH, 0, *clock, 1.0f + round));
          Execute(shard, Request(t, proto::PUSH, 1, *clock, 0.3f));
        }
      }
      ++*clock;
      ClockAll(shard, *clock);
    }
  }

  // A new shard restored from the snapshot of another trained for `rounds`
  // rounds (Train); the snapshot goes to `*saved` when given. Null, with a
  // test failure, when the snapshot or the restore fails.
  std::unique_ptr<Shard> RestoredAfter(int rounds, int64_t* clock,
                                       ShardState* saved = nullptr) {
    std::unique_ptr<Shard> a = NewShard();
    Train(a.get(), rounds, clock);
    absl::StatusOr<ShardState> state = a->Snapshot(absl::ZeroDuration());
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return nullptr;
    std::unique_ptr<Shard> b = NewShard();
    const absl::Status restored = b->Restore(*state);
    EXPECT_TRUE(restored.ok()) << restored;
    if (!restored.ok()) return nullptr;
    if (saved != nullptr) *saved = *std::move(state);
    return b;
  }

  // Pulls of every table (values in request order).
  std::vector<std::string> PullAll(Shard* shard) {
    std::vector<std::string> out;
    for (const TableConfig& t : config_.tables) {
      out.push_back(
          Execute(shard, Request(t, proto::PULL, -1, 0, 0)).values());
    }
    return out;
  }

  Executor executor_;
  ClusterConfig config_;
  uint64_t next_request_id_ = 1;
};

void ExpectSameState(const ShardState& a, const ShardState& b) {
  EXPECT_EQ(a.shard_index, b.shard_index);
  EXPECT_EQ(a.num_shards, b.num_shards);
  EXPECT_EQ(a.floor_clock, b.floor_clock);
  EXPECT_EQ(a.barriers_completed, b.barriers_completed);
  ASSERT_EQ(a.workers.size(), b.workers.size());
  for (size_t i = 0; i < a.workers.size(); ++i) {
    EXPECT_EQ(a.workers[i].clock, b.workers[i].clock);
    EXPECT_EQ(a.workers[i].barriers_arrived, b.workers[i].barriers_arrived);
  }
  ASSERT_EQ(a.tables.size(), b.tables.size());
  for (size_t i = 0; i < a.tables.size(); ++i) {
    const TableState& x = a.tables[i];
    const TableState& y = b.tables[i];
    SCOPED_TRACE(x.config.name);
    EXPECT_EQ(x.config.name, y.config.name);
    EXPECT_EQ(x.config.table_id, y.config.table_id);
    EXPECT_EQ(x.config.optimizer.type, y.config.optimizer.type);
    EXPECT_EQ(x.version, y.version);
    EXPECT_EQ(x.steps, y.steps);
    EXPECT_EQ(x.pushes, y.pushes);
    EXPECT_EQ(x.pulls, y.pulls);
    EXPECT_EQ(x.bytes_in, y.bytes_in);
    EXPECT_EQ(x.bytes_out, y.bytes_out);
    // Bitwise: a restore must not round anything.
    ASSERT_EQ(x.values.size(), y.values.size());
    EXPECT_EQ(std::memcmp(x.values.data(), y.values.data(),
                          x.values.size() * sizeof(float)),
              0);
    ASSERT_EQ(x.slots.size(), y.slots.size());
    for (size_t s = 0; s < x.slots.size(); ++s) {
      ASSERT_EQ(x.slots[s].size(), y.slots[s].size());
      EXPECT_EQ(std::memcmp(x.slots[s].data(), y.slots[s].data(),
                            x.slots[s].size() * sizeof(float)),
                0);
    }
    EXPECT_EQ(x.rows, y.rows);
    ASSERT_EQ(x.dedup.size(), y.dedup.size());
    for (size_t c = 0; c < x.dedup.size(); ++c) {
      EXPECT_EQ(x.dedup[c].client_id, y.dedup[c].client_id);
      EXPECT_EQ(x.dedup[c].max_evicted_id, y.dedup[c].max_evicted_id);
      ASSERT_EQ(x.dedup[c].applied.size(), y.dedup[c].applied.size());
      for (size_t e = 0; e < x.dedup[c].applied.size(); ++e) {
        EXPECT_EQ(x.dedup[c].applied[e].request_id,
                  y.dedup[c].applied[e].request_id);
        EXPECT_EQ(x.dedup[c].applied[e].version, y.dedup[c].applied[e].version);
        EXPECT_EQ(x.dedup[c].applied[e].step, y.dedup[c].applied[e].step);
      }
    }
  }
}

TEST_F(CheckpointTest, RoundTripIsExactAndTrainingContinuesIdentically) {
  std::unique_ptr<Shard> a = NewShard();
  int64_t clock = 0;
  Train(a.get(), 3, &clock);
  const proto::DataRequest applied_before =
      Request(config_.tables[3], proto::PUSH, -1, 0, 2.0f);
  const uint64_t version_before = Execute(a.get(), applied_before).version();

  absl::StatusOr<ShardState> saved = a->Snapshot(absl::ZeroDuration());
  ASSERT_TRUE(saved.ok()) << saved.status();
  saved->partition_fingerprint = Fingerprint();
  for (const TableState& t : saved->tables) {
    EXPECT_EQ(t.dropped_open_step_pushes, 0u) << t.config.name;
    EXPECT_GT(t.version, 0u) << t.config.name;
  }
  EXPECT_EQ(saved->floor_clock, 3);
  EXPECT_EQ(saved->tables[8].steps, 3);  // first sync table

  const std::string dir = TempDir();
  absl::StatusOr<CheckpointInfo> info = WriteCheckpointFile(dir, 1, *saved);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->path, dir + "/ckpt-000000000001.bin");
  EXPECT_EQ(info->bytes, ReadBytes(info->path).size());
  EXPECT_NE(access((info->path + ".tmp").c_str(), F_OK), 0);

  absl::StatusOr<ShardState> loaded = ReadCheckpointFile(info->path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->partition_fingerprint, Fingerprint());
  ExpectSameState(*saved, *loaded);

  std::unique_ptr<Shard> b = NewShard();
  ASSERT_TRUE(b->Restore(*loaded).ok());
  absl::StatusOr<ShardState> again = b->Snapshot(absl::ZeroDuration());
  ASSERT_TRUE(again.ok());
  ExpectSameState(*saved, *again);

  // The restored shard behaves exactly like the original from here on: the
  // same pushes give bitwise identical parameters (optimizer state, Adam's
  // step count t and the sync step all came back).
  int64_t clock_a = clock, clock_b = clock;
  const uint64_t saved_next_id = next_request_id_;
  Train(a.get(), 2, &clock_a);
  next_request_id_ = saved_next_id;
  Train(b.get(), 2, &clock_b);
  EXPECT_EQ(PullAll(a.get()), PullAll(b.get()));

  // A push applied before the checkpoint and retried against the restored
  // shard is acknowledged with its original version, not applied again.
  const std::vector<std::string> before = PullAll(b.get());
  const proto::DataResponse retry = Execute(b.get(), applied_before);
  EXPECT_EQ(retry.version(), version_before);
  EXPECT_EQ(PullAll(b.get()), before);
  EXPECT_EQ(
      b->FindTableForTesting(3)->duplicates_for_testing(), 1u);
}

// Workers that clock far ahead of a restored shard (it lost those steps) move
// its sync tables there at once: the open step is applied, the empty steps
// after it are skipped, not walked one by one.
TEST_F(CheckpointTest, WorkersFarAheadOfARestoredShardSkipEmptyStepsAtOnce) {
  int64_t clock = 0;
  std::unique_ptr<Shard> b = RestoredAfter(2, &clock);
  ASSERT_NE(b, nullptr);

  std::vector<uint64_t> versions;
  for (const TableConfig& t : config_.tables) {
    if (t.consistency != Consistency::kSync) continue;
    versions.push_back(
        Execute(b.get(), Request(t, proto::PUSH, 0, clock, 1.0f)).version());
  }
  constexpr int64_t kFar = int64_t{1} << 50;
  ClockAll(b.get(), kFar);
  size_t i = 0;
  for (const TableConfig& t : config_.tables) {
    if (t.consistency != Consistency::kSync) continue;
    SCOPED_TRACE(t.name);
    const ShardTable* table = b->FindTableForTesting(t.table_id);
    EXPECT_EQ(table->steps(), kFar);
    EXPECT_EQ(table->version(), versions[i++] + 1);  // the open step, once
  }
}

TEST_F(CheckpointTest, SyncSnapshotWaitsForTheStepBoundaryOrLeavesTheStepOut) {
  std::unique_ptr<Shard> a = NewShard();
  int64_t clock = 0;
  Train(a.get(), 1, &clock);
  const TableConfig& sync_table = config_.tables[8];
  const proto::DataRequest open_push =
      Request(sync_table, proto::PUSH, 0, clock, 1.0f);
  Execute(a.get(), open_push);

  // No wait: the open step is left out, with its dedup entry.
  absl::StatusOr<ShardState> partial = a->Snapshot(absl::ZeroDuration());
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->tables[8].dropped_open_step_pushes, 1u);
  EXPECT_EQ(partial->tables[8].steps, 1);
  for (const auto& w : partial->tables[8].dedup) {
    for (const auto& e : w.applied) {
      EXPECT_NE(e.request_id, open_push.request_id());
    }
  }
  // Restored from it, the retried push is applied (it is not in the copy).
  std::unique_ptr<Shard> b = NewShard();
  ASSERT_TRUE(b->Restore(*partial).ok());
  proto::DataResponse response;
  ASSERT_TRUE(
      b->FindTableForTesting(8)->Execute(open_push, &response).ok());
  EXPECT_EQ(b->FindTableForTesting(8)->duplicates_for_testing(), 0u);

  // With a wait, the copy is taken right after the step is applied.
  absl::Notification taken;
  absl::StatusOr<ShardState> boundary;
  std::thread snapshot([&] {
    boundary = a->Snapshot(absl::Seconds(30));
    taken.Notify();
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(taken.HasBeenNotified());
  Execute(a.get(), Request(sync_table, proto::PUSH, 1, clock, 1.0f));
  ClockAll(a.get(), clock + 1);
  snapshot.join();
  ASSERT_TRUE(boundary.ok()) << boundary.status();
  EXPECT_EQ(boundary->tables[8].dropped_open_step_pushes, 0u);
  EXPECT_EQ(boundary->tables[8].steps, 2);
  bool found = false;
  for (const auto& w : boundary->tables[8].dedup) {
    for (const auto& e : w.applied) found |= e.request_id == open_push.request_id();
  }
  EXPECT_TRUE(found);
}

// A cluster cut (server/step_holds.h) on one shard: round 1 holds every
// sync table at its step even when the workers' clocks are past it; round 2
// lets each table advance to exactly its cut step, copies it there and
// lifts the hold.
TEST_F(CheckpointTest, CutHoldsSyncStepsAndCopiesThemAtTheCutStep) {
  std::unique_ptr<Shard> a = NewShard();
  int64_t clock = 0;
  Train(a.get(), 1, &clock);
  const StepsByTable held =
      a->HoldStepsForCut(/*cut_id=*/5, absl::Now() + absl::Seconds(30));
  StepsByTable at;
  int sync_tables = 0;
  for (const TableConfig& t : config_.tables) {
    if (t.consistency != Consistency::kSync) continue;
    ++sync_tables;
    ASSERT_TRUE(held.contains(t.table_id)) << t.name;
    EXPECT_EQ(held.at(t.table_id), 1) << t.name;
    at[t.table_id] = 2;
  }
  EXPECT_EQ(held.size(), sync_tables);  // async / ssp tables are not held

  // Both workers finish step 1 and clock past it: the hold keeps it open.
  Train(a.get(), 1, &clock);
  ShardTable* sync_table = a->FindTableForTesting(8);
  EXPECT_EQ(sync_table->steps(), 1);

  absl::StatusOr<ShardState> cut = a->Snapshot(absl::Seconds(30), 5, at);
  ASSERT_TRUE(cut.ok()) << cut.status();
  for (const TableState& t : cut->tables) {
    if (t.config.consistency == Consistency::kSync) {
      EXPECT_EQ(t.steps, 2) << t.config.name;
    }
  }
  // The hold is gone: step 2 completes as soon as the clocks allow.
  Execute(a.get(), Request(config_.tables[8], proto::PUSH, 1, clock, 1.0f));
  ClockAll(a.get(), clock + 1);
  EXPECT_EQ(sync_table->steps(), 3);

  // A table past its cut step, and one that never gets there.
  absl::StatusOr<ShardState> past = a->Snapshot(absl::Seconds(1), 6, {{8, 2}});
  EXPECT_EQ(past.status().code(), absl::StatusCode::kFailedPrecondition)
      << past.status();
  EXPECT_THAT(past.status().message(),
              HasSubstr("is at sync step 3, not at the cut's step 2"));
  absl::StatusOr<ShardState> never =
      a->Snapshot(absl::Milliseconds(50), 7, {{8, 9}});
  EXPECT_EQ(never.status().code(), absl::StatusCode::kDeadlineExceeded)
      << never.status();
}

TEST_F(CheckpointTest, ALapsedCutHoldLetsTheStepsGoOn) {
  std::unique_ptr<Shard> a = NewShard();
  int64_t clock = 0;
  Train(a.get(), 1, &clock);
  const absl::Time expiry = absl::Now() + absl::Seconds(30);
  a->HoldStepsForCut(/*cut_id=*/5, expiry);
  Train(a.get(), 1, &clock);
  ShardTable* sync_table = a->FindTableForTesting(8);
  EXPECT_EQ(sync_table->steps(), 1);
  a->CheckLiveness(expiry);  // the monitor, once the hold has lapsed
  for (int i = 0; i < 1000 && sync_table->steps() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(5));  // AdvanceSteps is scheduled
  }
  EXPECT_EQ(sync_table->steps(), 2);
}

class DamagedFileTest : public CheckpointTest {
 protected:
  void SetUp() override {
    std::unique_ptr<Shard> a = NewShard();
    int64_t clock = 0;
    Train(a.get(), 1, &clock);
    absl::StatusOr<ShardState> state = a->Snapshot(absl::ZeroDuration());
    ASSERT_TRUE(state.ok());
    absl::StatusOr<CheckpointInfo> info =
        WriteCheckpointFile(TempDir(), 1, *state);
    ASSERT_TRUE(info.ok()) << info.status();
    path_ = info->path;
    bytes_ = ReadBytes(path_);
  }
  std::string path_;
  std::string bytes_;
};

TEST_F(DamagedFileTest, FlippedByteIsAChecksumMismatch) {
  for (size_t at : {size_t{40}, bytes_.size() / 2, bytes_.size() - 9}) {
    std::string damaged = bytes_;
    damaged[at] ^= 0x10;
    WriteBytes(path_, damaged);
    absl::StatusOr<ShardState> r = ReadCheckpointFile(path_);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << at;
    EXPECT_THAT(r.status().message(), HasSubstr(path_));
    EXPECT_THAT(r.status().message(), HasSubstr("checksum mismatch"));
  }
  std::string damaged = bytes_;
  damaged[bytes_.size() - 1] ^= 0x01;  // the stored checksum itself
  WriteBytes(path_, damaged);
  EXPECT_THAT(ReadCheckpointFile(path_).status().message(),
              HasSubstr("checksum mismatch"));
}

TEST_F(DamagedFileTest, TruncatedFileSaysTruncated) {
  for (size_t keep : {bytes_.size() - 1, bytes_.size() / 3, size_t{20}}) {
    WriteBytes(path_, bytes_.substr(0, keep));
    absl::StatusOr<ShardState> r = ReadCheckpointFile(path_);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << keep;
    EXPECT_THAT(r.status().message(), HasSubstr("truncated")) << keep;
  }
  WriteBytes(path_, bytes_ + "x");
  EXPECT_THAT(ReadCheckpointFile(path_).status().message(),
              HasSubstr("unexpected bytes after the end"));
}

TEST_F(DamagedFileTest, WrongMagicAndVersion) {
  std::string damaged = bytes_;
  damaged[0] = 'X';
  WriteBytes(path_, damaged);
  absl::StatusOr<ShardState> r = ReadCheckpointFile(path_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("wrong magic"));

  damaged = bytes_;
  damaged[8] = 7;  // format version
  WriteBytes(path_, damaged);
  EXPECT_THAT(ReadCheckpointFile(path_).status().message(),
              HasSubstr("format version 7"));

  EXPECT_EQ(ReadCheckpointFile(path_ + ".missing").status().code(),
            absl::StatusCode::kNotFound);
}

// One shard's own files (the --allow_inconsistent_restore rule); the
// cluster rule, with every shard's files, is tests/cluster_checkpoint_test.
TEST_F(CheckpointTest, RestoresNewestValidAndKeepsTwo) {
  const std::string root = TempDir();
  CheckpointerOptions options;
  options.root = root;
  options.allow_inconsistent_restore = true;
  std::unique_ptr<Shard> a = NewShard();
  Checkpointer writer(a.get(), Fingerprint(), options);
  EXPECT_EQ(writer.shard_dir(), root + "/shard-0-of-2");
  int64_t clock = 0;
  std::vector<std::vector<std::string>> values;
  for (int i = 0; i < 3; ++i) {
    Train(a.get(), 1, &clock);
    values.push_back(PullAll(a.get()));
    absl::StatusOr<CheckpointInfo> info =
        writer.WriteNow(i + 1, absl::ZeroDuration());
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->seq, static_cast<uint64_t>(i + 1));
  }
  absl::StatusOr<std::vector<CheckpointFile>> files =
      ListCheckpoints(writer.shard_dir());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);  // the newest two
  EXPECT_EQ((*files)[0].seq, 3u);
  EXPECT_EQ((*files)[1].seq, 2u);

  // Damage the newest: the restore skips it (and sets it aside) and loads
  // the one before.
  std::string newest = ReadBytes((*files)[0].path);
  newest[newest.size() / 2] ^= 0x40;
  WriteBytes((*files)[0].path, newest);
  WriteBytes(writer.shard_dir() + "/ckpt-000000000009.bin.tmp", "partial");

  std::unique_ptr<Shard> b = NewShard();
  Checkpointer reader(b.get(), Fingerprint(), options);
  absl::StatusOr<std::string> restored = reader.RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(*restored, (*files)[1].path);
  // PullAll counts pulls; compare the values only.
  EXPECT_EQ(PullAll(b.get()), values[1]);
  EXPECT_EQ(access(((*files)[0].path + ".corrupt").c_str(), F_OK), 0);
  EXPECT_NE(access((writer.shard_dir() + "/ckpt-000000000009.bin.tmp").c_str(),
                   F_OK),
            0);
  // Ids only grow: the restored shard's newest id is 3 (on disk).
  EXPECT_EQ(reader.WriteNow(3, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reader.WriteNow(0, absl::ZeroDuration()).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<CheckpointInfo> next = reader.WriteFinal(absl::ZeroDuration());
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->seq, 4u);

  // No checkpoint at all: nothing restored.
  CheckpointerOptions empty = options;
  empty.root = TempDir();
  std::unique_ptr<Shard> c = NewShard();
  Checkpointer fresh(c.get(), Fingerprint(), empty);
  absl::StatusOr<std::string> none = fresh.RestoreLatest();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
}

TEST_F(CheckpointTest, ForeignCheckpointRefusesToStart) {
  CheckpointerOptions options;
  options.root = TempDir();
  options.allow_inconsistent_restore = true;
  std::unique_ptr<Shard> a = NewShard();
  Checkpointer writer(a.get(), Fingerprint(), options);
  ASSERT_TRUE(writer.WriteNow(1, absl::ZeroDuration()).ok());

  std::unique_ptr<Shard> b = NewShard();
  Checkpointer other(b.get(), Fingerprint() + 1, options);
  absl::StatusOr<std::string> r = other.RestoreLatest();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("partition fingerprint"));
  EXPECT_THAT(r.status().message(), HasSubstr("refusing to start"));

  // A changed optimizer type (same partition) does not fit either.
  config_.tables[0].optimizer.type = "adam";
  std::unique_ptr<Shard> c = NewShard();
  Checkpointer changed(c.get(), Fingerprint(), options);
  r = changed.RestoreLatest();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("optimizer"));
}

TEST_F(CheckpointTest, CheckpointerThreadAnswersRequests) {
  CheckpointerOptions options;
  options.root = TempDir();
  std::unique_ptr<Shard> a = NewShard();
  Checkpointer checkpointer(a.get(), Fingerprint(), options);
  // Not running: refused at once.
  absl::Status refused;
  checkpointer.Request(
      1, {}, [&](absl::StatusOr<CheckpointInfo> info) { refused = info.status(); });
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);

  checkpointer.Start();
  absl::Notification done;
  absl::StatusOr<CheckpointInfo> result;
  checkpointer.Request(7, {}, [&](absl::StatusOr<CheckpointInfo> info) {
    result = std::move(info);
    done.Notify();
  });
  done.WaitForNotification();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->seq, 7u);
  EXPECT_TRUE(ReadCheckpointFile(result->path).ok());
  checkpointer.Stop();
}

// Two restored shards, each behind on the worker whose requests wait on the
// other, would wait for each other forever (seen in ps_launch's chaos test):
// a heartbeat carries the worker's clock, so a restored shard catches its
// workers up from their heartbeats alone and applies the lost steps empty.
TEST_F(CheckpointTest, HeartbeatsCatchARestoredShardUp) {
  int64_t clock = 0;
  ShardState saved;
  std::unique_ptr<Shard> b = RestoredAfter(1, &clock, &saved);
  ASSERT_NE(b, nullptr);
  b->TakeOverMembership(nullptr, absl::Now());  // no replicated one
  b->Start();
  ShardTable* sync_table = b->FindTableForTesting(8);
  ASSERT_EQ(sync_table->steps(), 1);
  for (int w = 0; w < 2; ++w) {
    proto::HeartbeatRequest beat;
    beat.set_worker_id(w);
    beat.set_session_id(kClient);
    beat.set_clock(4);  // the workers went on to clock 4 meanwhile
    proto::HeartbeatResponse response;
    ASSERT_TRUE(b->Heartbeat(beat, &response).ok());
    EXPECT_TRUE(response.registered()) << w;
  }
  for (int i = 0; i < 1000 && sync_table->steps() < 4; ++i) {
    absl::SleepFor(absl::Milliseconds(5));  // AdvanceSteps is scheduled
  }
  EXPECT_EQ(sync_table->steps(), 4);  // steps 1-3 applied empty
  EXPECT_EQ(sync_table->version(), saved.tables[8].version);
}

// A heartbeat or a pull may carry a clock older than the worker's (built
// before its last Clock() completed, answered late by a paused server): it
// raises the clock without confirming it, so the Clock call that follows
// still catches the registry up. A new primary that adopted a worker from
// such a heartbeat once refused the worker's next Clock as a skip.
TEST(WorkerCatchUpTest, AnUnconfirmedCatchUpLeavesTheNextRequestFreeToGoOn) {
  const absl::Time t = absl::Now();
  WorkerRegistry restored(2, absl::Seconds(60), absl::Seconds(60), t);
  ASSERT_TRUE(restored.ImportState({{3, 0}, {3, 0}}, 3, 0).ok());
  EXPECT_TRUE(restored.CatchUp(0, 9, /*confirms=*/false));  // a heartbeat
  EXPECT_FALSE(restored.CatchUp(0, 8, /*confirms=*/false));  // a late pull
  EXPECT_TRUE(restored.CatchUp(0, 10, /*confirms=*/true));  // Clock(11)
  absl::StatusOr<int64_t> clock = restored.AdvanceClock(0, 11, t);
  ASSERT_TRUE(clock.ok()) << clock.status();
  EXPECT_EQ(*clock, 11);
  EXPECT_FALSE(restored.CatchUp(0, 20, /*confirms=*/true));  // confirmed
  EXPECT_EQ(restored.AdvanceClock(0, 13, t).status().code(),
            absl::StatusCode::kInvalidArgument);  // skips stay errors
}

TEST(WorkerCatchUpTest, OnlyARestoredRegistryCatchesUpAndOnlyOnce) {
  const absl::Time t = absl::Now();
  WorkerRegistry fresh(2, absl::Seconds(60), absl::Seconds(60), t);
  EXPECT_FALSE(fresh.CatchUp(0, 5, /*confirms=*/true));  // not restored: clock jumps stay errors
  EXPECT_EQ(fresh.AdvanceClock(0, 3, t).status().code(),
            absl::StatusCode::kInvalidArgument);

  WorkerRegistry restored(2, absl::Seconds(60), absl::Seconds(60), t);
  ASSERT_TRUE(restored.ImportState({{3, 0}, {3, 0}}, 3, 0).ok());
  EXPECT_EQ(restored.FloorClock(), 3);
  EXPECT_TRUE(restored.CatchUp(0, 7, /*confirms=*/true));
  EXPECT_EQ(restored.FloorClock(), 3);  // worker 1 still at 3
  EXPECT_FALSE(restored.CatchUp(0, 9, /*confirms=*/true));  // confirmed: only the first counts
  EXPECT_FALSE(restored.CatchUp(1, 2, /*confirms=*/true));  // behind: confirms, no change
  EXPECT_FALSE(restored.CatchUp(1, 7, /*confirms=*/true));
  EXPECT_EQ(restored.FloorClock(), 3);
  // Worker 1's Clock(4) is an ordinary step now; worker 0 is at 7.
  ASSERT_TRUE(restored.AdvanceClock(1, 4, t).ok());
  EXPECT_EQ(restored.FloorClock(), 4);
}

}  // namespace
}  // namespace ps
