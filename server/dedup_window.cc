#include "server/dedup_window.h"

#include <algorithm>
#include <utility>

namespace ps {

DedupWindow::DedupWindow(const Options& options) : options_(options) {}

DedupWindow::Verdict DedupWindow::Check(uint64_t client_id,
                                        uint64_t request_id,
                                        Applied* original) const {
  if (client_id == 0) return Verdict::kNew;
  auto it = clients_.find(client_id);
  if (it == clients_.end()) return Verdict::kNew;
  const Client& client = *it->second;
  auto found = client.by_id.find(request_id);
  if (found != client.by_id.end()) {
    *original = found->second;
    return Verdict::kDuplicate;
  }
  if (client.max_evicted_id != 0 && request_id <= client.max_evicted_id) {
    return Verdict::kTooOld;
  }
  return Verdict::kNew;
}

void DedupWindow::Touch(Lru::iterator it, absl::Time now) {
  it->last_used = now;
  lru_.splice(lru_.end(), lru_, it);  // iterators stay valid
}

void DedupWindow::Forget(Lru::iterator it) {
  num_entries_ -= static_cast<int64_t>(it->order.size());
  clients_.erase(it->client_id);
  lru_.erase(it);
}

void DedupWindow::Append(Client* client, const Applied& applied) {
  if (!client->by_id.emplace(applied.request_id, applied).second) return;
  client->order.push_back(applied);
  ++num_entries_;
  const size_t window = static_cast<size_t>(std::max<int64_t>(options_.window, 1));
  while (client->order.size() > window) {
    const uint64_t old = client->order.front().request_id;
    client->order.pop_front();
    client->by_id.erase(old);
    client->max_evicted_id = std::max(client->max_evicted_id, old);
    --num_entries_;
  }
}

void DedupWindow::Record(uint64_t client_id, const Applied& applied,
                         absl::Time now) {
  if (client_id == 0) return;
  auto it = clients_.find(client_id);
  Lru::iterator client;
  if (it == clients_.end()) {
    while (!lru_.empty() &&
           static_cast<int64_t>(clients_.size()) >=
               std::max<int64_t>(options_.max_clients, 1)) {
      Forget(lru_.begin());
    }
    lru_.push_back(Client());
    client = std::prev(lru_.end());
    client->client_id = client_id;
    clients_.emplace(client_id, client);
  } else {
    client = it->second;
  }
  Touch(client, now);
  Append(&*client, applied);
}

int64_t DedupWindow::EvictIdle(absl::Time now) {
  int64_t forgotten = 0;
  const absl::Time cutoff = now - options_.idle_timeout;
  while (!lru_.empty() && lru_.front().last_used < cutoff) {
    Forget(lru_.begin());
    ++forgotten;
  }
  return forgotten;
}

std::vector<DedupWindow::ClientWindow> DedupWindow::Export() const {
  std::vector<ClientWindow> out;
  out.reserve(lru_.size());
  for (const Client& client : lru_) {
    ClientWindow w;
    w.client_id = client.client_id;
    w.max_evicted_id = client.max_evicted_id;
    w.applied.assign(client.order.begin(), client.order.end());
    out.push_back(std::move(w));
  }
  return out;
}

void DedupWindow::Import(const std::vector<ClientWindow>& windows,
                         absl::Time now) {
  lru_.clear();
  clients_.clear();
  num_entries_ = 0;
  for (const ClientWindow& w : windows) {
    if (w.client_id == 0 || clients_.contains(w.client_id)) continue;
    while (!lru_.empty() && static_cast<int64_t>(clients_.size()) >=
                                std::max<int64_t>(options_.max_clients, 1)) {
      Forget(lru_.begin());
    }
    lru_.push_back(Client());
    Lru::iterator client = std::prev(lru_.end());
    client->client_id = w.client_id;
    client->max_evicted_id = w.max_evicted_id;
    client->last_used = now;
    clients_.emplace(w.client_id, client);
    for (const Applied& a : w.applied) Append(&*client, a);
  }
}

}  // namespace ps
