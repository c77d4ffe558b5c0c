// server.checkpoint_agreement: peers, both sides of the CheckpointPeers
// service (proto/ps.proto; the rule is server/checkpoint_set.h's):
//   - CheckpointPeers asks the other shards' servers (cluster.servers, with
//     the config's TLS and bearer token, as clients connect) what they hold;
//   - CheckpointPeerService answers for this shard from its Checkpointer,
//     from the moment the shard has verified its own files (before its
//     restore) on.
#ifndef PS_SERVER_CHECKPOINT_PEERS_H_
#define PS_SERVER_CHECKPOINT_PEERS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"
#include "server/checkpointer.h"
#include "server/server_queue.h"

namespace ps {

// Asks every other shard's server. Thread-safe (each Ask uses its own
// completion queue; the stubs are thread-safe).
class CheckpointPeers final : public PeerInventories {
 public:
  // Channels to every server of `config` but `shard` (created lazily by
  // gRPC: nothing connects before the first Ask). `fingerprint` is the
  // config's PartitionFingerprint; an answer with another is refused.
  // Errors: the TLS files' (ChannelCredentials).
  static absl::StatusOr<std::unique_ptr<CheckpointPeers>> Create(
      const ClusterConfig& config, uint32_t shard, uint64_t fingerprint);

  // PeerInventories. Each call of a round ends by min(deadline, now + 5 s);
  // rounds back off from 100 ms to 2 s.
  absl::StatusOr<std::vector<std::optional<ShardCheckpoints>>> Ask(
      absl::Time deadline, bool until_all) override;
  // Calls in flight are cancelled within 100 ms, backoffs end at once.
  void Cancel() override;

 private:
  CheckpointPeers(uint32_t shard, uint64_t fingerprint)
      : shard_(shard), fingerprint_(fingerprint) {}

  // One call to every shard whose slot of `answers` is empty, in parallel,
  // each ending by `deadline`; a failure's text goes to errors[j].
  // FAILED_PRECONDITION when a shard answers for another layout or refuses.
  absl::Status AskRound(absl::Time deadline,
                        std::vector<std::optional<ShardCheckpoints>>* answers,
                        std::vector<std::string>* errors);
  // Shard j's answer, checked against this server's layout.
  absl::StatusOr<ShardCheckpoints> FromResponse(
      uint32_t j, const proto::CheckpointInventoryResponse& response) const;

  // Constant after construction.
  const uint32_t shard_;
  const uint64_t fingerprint_;
  std::string authorization_;  // "authorization" metadata; "" = none
  std::vector<std::string> addresses_;  // cluster.servers
  std::vector<std::unique_ptr<proto::CheckpointPeers::Stub>> stubs_;

  absl::Notification cancelled_;
};

// The CheckpointPeers service of one ps_server. Thread-safe; `checkpointer`
// (null without server.checkpoint_dir) outlives every call.
class CheckpointPeerService final
    : public proto::CheckpointPeers::WithAsyncMethod_GetCheckpointInventory<
          proto::CheckpointPeers::Service> {
 public:
  // `peers_mode`: server.checkpoint_agreement is peers (else every call is
  // refused with FAILED_PRECONDITION: the asking server's config differs).
  CheckpointPeerService(Checkpointer* checkpointer, bool peers_mode,
                        uint32_t shard, uint32_t num_shards,
                        uint64_t fingerprint, const std::string& auth_token);

  // Serves the method on `queue` from now on; call once, after the server
  // was built (BuildAndStart).
  void Serve(ServerQueue* queue);

 private:
  // UNAVAILABLE until the shard has verified its files.
  grpc::Status Answer(const proto::CheckpointInventoryRequest& request,
                      proto::CheckpointInventoryResponse* response) const;

  Checkpointer* const checkpointer_;
  const bool peers_mode_;
  const uint32_t shard_;
  const uint32_t num_shards_;
  const uint64_t fingerprint_;
  const std::string expected_authorization_;
};

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINT_PEERS_H_
