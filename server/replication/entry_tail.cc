#include "server/replication/entry_tail.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ps::replication {

void EntryTail::Append(const Entry& entry) {
  if (enabled()) Append(Entry(entry));
}

void EntryTail::Append(Entry&& entry) {
  if (!enabled()) return;
  if (!entries_.empty() && entry.seq() != newest_seq() + 1) Clear();
  bytes_ += entry.data_request().size();
  entries_.push_back(std::move(entry));
  while (entries_.size() > 1 && bytes_ > max_bytes_) {
    bytes_ -= entries_.front().data_request().size();
    entries_.pop_front();
  }
}

void EntryTail::Clear() {
  entries_.clear();
  bytes_ = 0;
}

absl::StatusOr<std::vector<Entry>> EntryTail::After(uint64_t seq,
                                                    int64_t term) const {
  if (entries_.empty() || seq < entries_.front().seq()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this replica no longer holds entry ", seq, " (it holds ",
        entries_.empty()
            ? std::string("none")
            : absl::StrCat(entries_.front().seq(), " to ", newest_seq()),
        ")"));
  }
  if (seq > newest_seq()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the asking replica is ahead: it applied entry ", seq,
                     ", this one's history ends at ", newest_seq()));
  }
  const size_t at = seq - entries_.front().seq();
  if (entries_[at].term() != term) {
    return absl::FailedPreconditionError(absl::StrCat(
        "entry ", seq, " differs: term ", term, " on the asking replica, term ",
        entries_[at].term(), " here (it followed another history)"));
  }
  return std::vector<Entry>(entries_.begin() + at + 1, entries_.end());
}

}  // namespace ps::replication
