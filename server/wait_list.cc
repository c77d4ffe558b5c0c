#include "server/wait_list.h"

#include <memory>
#include <utility>
#include <vector>

namespace ps {

bool WaitList::ParkUnlessReady(Ready ready, Resume resume) {
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) {
      if (ready()) return true;
      entries_.push_back(Entry{std::move(ready), std::move(resume)});
      return false;
    }
  }
  resume(absl::UnavailableError("server is shutting down"));
  return false;
}

void WaitList::Notify() {
  std::vector<Resume> ready;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->ready()) {
        ready.push_back(std::move(it->resume));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Resume& resume : ready) {
    // The executor refuses work only while stopping; the operation then
    // completes with an error here rather than never.
    auto shared = std::make_shared<Resume>(std::move(resume));
    if (!executor_->Schedule([shared] { (*shared)(absl::OkStatus()); })) {
      (*shared)(absl::UnavailableError("server is shutting down"));
    }
  }
}

void WaitList::Close(const absl::Status& status) {
  std::list<Entry> entries;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    entries.swap(entries_);
  }
  for (Entry& e : entries) e.resume(status);
}

int64_t WaitList::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(entries_.size());
}

}  // namespace ps
