// A live view of one election in etcd: every contender's key under a prefix,
// and the leader (the key with the lowest create revision, as in etcd's own
// election recipe, clientv3/concurrency). Used by contenders (Elector), and
// by anyone who must find the primary of a shard and its term (backups,
// clients).
//
// How: a Range of the prefix at revision R, then a Watch of the prefix from
// R + 1 that applies each PUT / DELETE in revision order; after a broken or
// compacted watch it starts over with a new Range. The view is therefore
// always a state etcd had at revision(), never a mix.
//
// The term of a leader is the create revision of its key. etcd revisions only
// grow, and a new leader's key was created after the old leader's (the lowest
// existing key leads), so terms strictly increase from leader to leader.
//
// Thread safety: thread-safe. One thread, owned by the view, reads the watch
// (polling for it, never blocked inside gRPC: see kWatchPoll in the .cc);
// the destructor cancels and joins it.
#ifndef PS_SERVER_REPLICATION_ELECTION_VIEW_H_
#define PS_SERVER_REPLICATION_ELECTION_VIEW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {

// One contender's key.
struct Candidate {
  std::string key;
  std::string value;        // what the contender published (e.g. its address)
  int64_t create_revision = 0;  // = its term if it leads
  int64_t lease = 0;
};

struct ElectionSnapshot {
  // False until the first Range succeeded, and from a watch failure until the
  // next Range: then `error` says why and the rest is the last known state.
  bool synced = false;
  absl::Status error;
  // etcd revision this view reflects.
  int64_t revision = 0;
  // Empty when nobody contends.
  std::optional<Candidate> leader;
  // Every contender's key, ordered by create revision (leader first).
  std::map<int64_t, Candidate> candidates;
};

class ElectionView {
 public:
  // `prefix` names the election, e.g. "/ps/<cluster>/shard/3/primary/"; keys
  // are any below it. `on_change` (optional) runs on the view's thread after
  // every change of the snapshot. `client` must outlive the view.
  ElectionView(const EtcdClient* client, std::string prefix,
               std::function<void()> on_change = nullptr);
  ~ElectionView();

  ElectionSnapshot snapshot() const;
  // Waits until `done(snapshot)` holds; DEADLINE_EXCEEDED after `timeout`
  // with the last snapshot's description.
  absl::StatusOr<ElectionSnapshot> WaitFor(
      const std::function<bool(const ElectionSnapshot&)>& done,
      absl::Duration timeout) const;

  const std::string& prefix() const { return prefix_; }

 private:
  void Run();
  // One Range + Watch session; returns why it ended.
  absl::Status Session();
  // Waits for the completion of the one operation in flight on `queue`
  // without blocking inside gRPC; returns its ok.
  bool AwaitWatchEvent(grpc::CompletionQueue* queue);
  absl::Status Resync();
  void ApplyEvent(const mvccpb::Event& event, int64_t revision)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Changed();

  // Constant after construction.
  const EtcdClient* const client_;
  const std::string prefix_;
  const std::function<void()> on_change_;

  mutable absl::Mutex mu_;
  ElectionSnapshot snapshot_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;

  std::thread thread_;
};

// "<key> (term <create_revision>, value '<value>')" or "none".
std::string DescribeLeader(const std::optional<Candidate>& leader);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_ELECTION_VIEW_H_
