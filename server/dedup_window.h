// Exactly-once pushes: the push requests a shard-table has applied, per
// client, so a retried push is acknowledged without being applied again.
//
// A client resends every unanswered request after a reconnect with the same
// (client_id, request_id) (client/server_connection.h). The table records each
// push it applied here, atomically with the update (under the table's lock),
// and checks the window before applying a push. A retry whose id is in the
// window gets the original answer (version, step) back; the update is not
// repeated.
//
// Bounds:
//  - per client, the `window` most recently applied request ids are kept
//    (FIFO). A push whose id is not in the window but is <= the largest id
//    already evicted from it cannot be told apart from a retry of an evicted
//    push: Check() answers kTooOld and the table refuses it rather than risk
//    applying it twice. (Request ids grow per client, and a client has far
//    fewer than `window` requests in flight, so a first attempt is never
//    that old.)
//  - clients with no push for `idle_timeout` are forgotten (EvictIdle), and
//    at most `max_clients` are kept (the least recently used goes first).
// Memory: about 40 bytes per remembered id.
//
// client_id 0 means "no identity": such pushes are never deduplicated.
//
// The window is part of a table's checkpoint (Export / Import), so that a
// push applied before the checkpoint is not applied again when its client
// retries it against the restarted server.
//
// Thread safety: not thread-safe; the owning table serializes all calls.
#ifndef PS_SERVER_DEDUP_WINDOW_H_
#define PS_SERVER_DEDUP_WINDOW_H_

#include <cstdint>
#include <deque>
#include <list>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

namespace ps {

class DedupWindow {
 public:
  struct Options {
    int64_t window = 4096;  // remembered push ids per client (>= 1)
    absl::Duration idle_timeout = absl::Hours(1);
    int64_t max_clients = 65536;
  };

  // What the table answered when it applied a push.
  struct Applied {
    uint64_t request_id = 0;
    uint64_t version = 0;
    int64_t step = 0;
  };

  // One client's window, oldest first (checkpoints).
  struct ClientWindow {
    uint64_t client_id = 0;
    uint64_t max_evicted_id = 0;  // 0: nothing evicted yet
    std::vector<Applied> applied;
  };

  enum class Verdict { kNew, kDuplicate, kTooOld };

  explicit DedupWindow(const Options& options);

  // Looks up a push. kDuplicate fills `*original`. Does not record anything.
  Verdict Check(uint64_t client_id, uint64_t request_id,
                Applied* original) const;

  // Records an applied push at `now`. No-op for client_id 0. REQUIRES: Check()
  // answered kNew for it.
  void Record(uint64_t client_id, const Applied& applied, absl::Time now);

  // Forgets clients whose last Record() is before now - idle_timeout.
  // Returns how many were forgotten.
  int64_t EvictIdle(absl::Time now);

  // Drops every entry for which `drop(entry)` is true (e.g. the pushes of a
  // sync step a checkpoint does not contain).
  template <typename Pred>
  static void DropFrom(std::vector<ClientWindow>* windows, Pred drop);

  // The whole state, clients in least-recently-used-first order.
  std::vector<ClientWindow> Export() const;
  // Replaces the state; every client counts as used at `now`. Entries beyond
  // the window (a smaller configured window) are evicted oldest first.
  void Import(const std::vector<ClientWindow>& windows, absl::Time now);

  int64_t num_clients() const { return static_cast<int64_t>(clients_.size()); }
  int64_t num_entries() const { return num_entries_; }

 private:
  struct Client {
    uint64_t client_id = 0;
    uint64_t max_evicted_id = 0;
    std::deque<Applied> order;  // oldest first
    absl::flat_hash_map<uint64_t, Applied> by_id;
    absl::Time last_used;
  };
  using Lru = std::list<Client>;  // least recently used first

  void Touch(Lru::iterator it, absl::Time now);
  void Forget(Lru::iterator it);
  void Append(Client* client, const Applied& applied);

  const Options options_;
  Lru lru_;
  absl::flat_hash_map<uint64_t, Lru::iterator> clients_;
  int64_t num_entries_ = 0;
};

template <typename Pred>
void DedupWindow::DropFrom(std::vector<ClientWindow>* windows, Pred drop) {
  for (ClientWindow& w : *windows) {
    std::vector<Applied> kept;
    kept.reserve(w.applied.size());
    for (const Applied& a : w.applied) {
      if (!drop(a)) kept.push_back(a);
    }
    w.applied = std::move(kept);
  }
}

}  // namespace ps

#endif  // PS_SERVER_DEDUP_WINDOW_H_
