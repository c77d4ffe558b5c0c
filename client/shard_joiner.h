// Completes one data operation's future from its per-shard requests, and
// says where a failed operation got to.
//
// A push that spans shards is sent as one or more requests per shard. The
// connections resend every unanswered request with its request id after a
// reconnect, for client.max_reconnect_attempts attempts (server_connection.h),
// and each server applies a request id once (its dedup window): so a push
// completes on every shard exactly once, or, when a shard stays unreachable
// or refuses it, the operation fails with the first error's code and a
// message naming the shards that applied it and those that did not, plus a
// PushOutcome payload (ps::PushOutcomeOf in client.h). A refusal because
// the worker is not a member of the job (DataResponse.membership) also
// carries the MembershipError payload (ps::MembershipRefusalOf).
//
// Thread safety: thread-safe; Done() is called from the requests' callbacks.
#ifndef PS_CLIENT_SHARD_JOINER_H_
#define PS_CLIENT_SHARD_JOINER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "client/future.h"
#include "proto/ps.pb.h"

namespace ps {

class ShardJoiner {
 public:
  // What the operation is, for messages.
  struct Operation {
    proto::Op op = proto::PULL;
    std::string table;  // its name
    // Server addresses by shard index (shared by the client's operations).
    std::shared_ptr<const std::vector<std::string>> addresses;
  };

  // Completes `parent` once Done() was called `expected` times.
  // REQUIRES: expected > 0.
  static std::shared_ptr<ShardJoiner> Create(
      int64_t expected, std::shared_ptr<Future::State> parent,
      Operation operation);

  ShardJoiner(int64_t expected, std::shared_ptr<Future::State> parent,
              Operation operation);

  // Records one finished request to `shard`: `status` as the connection
  // reports it; `response` the server's answer, or null when none came.
  void Done(int shard, const absl::Status& status,
            const proto::DataResponse* response);

  // What an operation's request callbacks call: a ShardJoiner when the
  // operation has several requests; for a single request (most small
  // operations) none is made unless it fails, and the parent completes with
  // exactly the status Create(1, ...)->Done() would give (same message and
  // payloads). Copyable; thread-safe like ShardJoiner.
  class Completion {
   public:
    // REQUIRES: requests > 0.
    Completion(int64_t requests, std::shared_ptr<Future::State> parent,
               Operation operation);
    void Done(int shard, const absl::Status& status,
              const proto::DataResponse* response) const;

   private:
    std::shared_ptr<ShardJoiner> joiner_;  // several requests
    // One request: what a joiner would be made of.
    std::shared_ptr<Future::State> parent_;
    Operation operation_;
  };

 private:
  struct Failure {
    int shard = 0;
    absl::Status status;
    bool answered = false;  // the server answered (refused it)
    proto::MembershipState membership = proto::MEMBERSHIP_MEMBER;
    int64_t step = 0;
  };

  // The parent's status once every request finished.
  absl::Status Result() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<Future::State> parent_;
  const Operation operation_;
  std::atomic<int64_t> remaining_;
  absl::Mutex mu_;
  std::vector<int> succeeded_ ABSL_GUARDED_BY(mu_);  // pushes only
  std::vector<Failure> failures_ ABSL_GUARDED_BY(mu_);
};

// Attaches / reads the PushOutcome payload of a failed push's status.
absl::Status WithPushOutcome(absl::Status status, const PushOutcome& outcome);

}  // namespace ps

#endif  // PS_CLIENT_SHARD_JOINER_H_
