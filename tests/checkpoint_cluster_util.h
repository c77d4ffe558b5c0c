// Helpers of the multi-process checkpoint tests (cluster_checkpoint_test,
// peer_checkpoint_test, checkpoint_enospc_test, checkpoint_exit_test): a
// LocalCluster whose dense table 0 of `size` elements uses SGD with learning
// rate 1, so pushing -delta adds delta.
// gtest assertions report failures in the calling test.
#ifndef PS_TESTS_CHECKPOINT_CLUSTER_UTIL_H_
#define PS_TESTS_CHECKPOINT_CLUSTER_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tests/cluster_harness.h"

namespace ps::testing {

// The config body of these clusters: dense table "w" (table 0) of `size`
// elements with `consistency` and SGD at learning rate 1, and a `server:`
// section with checkpoint_dir `dir` then `more_server_lines` (each
// "  key: value\n").
std::string CheckpointedTableYaml(uint64_t size, absl::string_view consistency,
                                  absl::string_view dir,
                                  absl::string_view more_server_lines = "");

// "$TEST_TMPDIR/<name>", removed if it exists.
std::string FreshTestDir(const std::string& name);

// Adds `delta` to every element of table 0 (one anonymous push).
void AddToAll(LocalCluster& cluster, uint64_t size, float delta);

// Table 0's values (empty, with a test failure, when the pull fails).
std::vector<float> PullAll(LocalCluster& cluster, uint64_t size);

// A coordinated checkpoint (Client::Checkpoint: one id for every shard);
// returns that id, read back from every shard's path (0 on a failure).
uint64_t CoordinatedCheckpoint(LocalCluster& cluster);

// Shard `shard`'s file of checkpoint `id` under checkpoint directory `root`
// (server/checkpoint_file.h's layout).
std::string CheckpointPartPath(const std::string& root, int shard,
                               int num_shards, uint64_t id);

// Sends `signal` to every server.
void KillAll(LocalCluster& cluster, int signal);

// The fall-back tests' scene: adds 1 and takes coordinated checkpoint
// *older, adds 1 and takes *newer, adds 1 more (in no checkpoint), then
// SIGKILLs every server, so none writes a final checkpoint. Call it in
// ASSERT_NO_FATAL_FAILURE: it fails the test when *newer <= *older.
void CheckpointTwiceThenKill(LocalCluster& cluster, uint64_t size,
                             uint64_t* older, uint64_t* newer);

}  // namespace ps::testing

#endif  // PS_TESTS_CHECKPOINT_CLUSTER_UTIL_H_
