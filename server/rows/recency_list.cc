#include "server/rows/recency_list.h"

#include <cstddef>

namespace ps {

void RecencyList::Grow(uint32_t slot) {
  if (slot < prev_.size()) return;
  const size_t n = static_cast<size_t>(slot) + 1;
  prev_.resize(n, kNone);
  next_.resize(n, kNone);
  in_list_.resize(n, false);
  if (with_stamps_) stamps_.resize(n, 0);
}

void RecencyList::Unlink(uint32_t slot) {
  const uint32_t p = prev_[slot];
  const uint32_t n = next_[slot];
  if (p != kNone) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n != kNone) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[slot] = next_[slot] = kNone;
}

void RecencyList::Touch(uint32_t slot, int64_t stamp) {
  Grow(slot);
  if (with_stamps_) stamps_[slot] = stamp;
  if (in_list_[slot]) {
    if (head_ == slot) return;
    Unlink(slot);
  } else {
    in_list_[slot] = true;
    ++size_;
  }
  next_[slot] = head_;
  prev_[slot] = kNone;
  if (head_ != kNone) prev_[head_] = slot;
  head_ = slot;
  if (tail_ == kNone) tail_ = slot;
}

void RecencyList::Remove(uint32_t slot) {
  if (!contains(slot)) return;
  Unlink(slot);
  in_list_[slot] = false;
  --size_;
}

std::vector<uint32_t> RecencyList::OldestFirst() const {
  std::vector<uint32_t> out;
  out.reserve(size_);
  for (uint32_t s = tail_; s != kNone; s = prev_[s]) out.push_back(s);
  return out;
}

void RecencyList::Clear() {
  prev_.clear();
  next_.clear();
  stamps_.clear();
  in_list_.clear();
  head_ = tail_ = kNone;
  size_ = 0;
}

}  // namespace ps
