#include "server/rows/row_index.h"

#include <algorithm>

namespace ps {

RowIndex::RowIndex(int tags)
    : stride_(2 + static_cast<size_t>(tags)),
      set_(0, SlotHash{this}, SlotEq{this}) {}

uint32_t RowIndex::Find(uint64_t id) const {
  auto it = set_.find(IdKey{id});
  return it == set_.end() ? kNoSlot : *it;
}

uint32_t RowIndex::Insert(uint64_t id) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
    live_[slot] = true;
  } else {
    slot = static_cast<uint32_t>(live_.size());
    if (words_.size() + stride_ > words_.capacity()) {
      // 1.5x rather than the library's 2x: the records are most of the
      // index's memory (row_cost.h counts on at most 1.5 of them per row).
      words_.reserve(words_.capacity() + words_.capacity() / 2 + 16 * stride_);
    }
    words_.resize(words_.size() + stride_);
    live_.push_back(true);
  }
  std::memcpy(&words_[Record(slot)], &id, sizeof(id));
  std::fill_n(words_.begin() + Record(slot) + 2, stride_ - 2, 0u);
  // The id is in place before the set hashes the slot.
  set_.insert(slot);
  return slot;
}

void RowIndex::Remove(uint32_t slot) {
  set_.erase(slot);  // hashes the slot's id: erase before it is forgotten
  live_[slot] = false;
  free_.push_back(slot);
}

uint64_t RowIndex::AllocatedBytes() const {
  // absl's flat_hash_set holds capacity() slots plus capacity() + 1 + 15
  // control bytes (one group cloned at the end); when empty it holds none.
  const uint64_t table =
      set_.capacity() == 0
          ? 0
          : set_.capacity() * sizeof(uint32_t) + set_.capacity() + 16;
  return table + words_.capacity() * sizeof(uint32_t) + live_.capacity() / 8 +
         free_.capacity() * sizeof(uint32_t);
}

void RowIndex::Clear() {
  set_.clear();
  words_.clear();
  live_.clear();
  free_.clear();
}

void RowIndex::Reserve(uint64_t rows) {
  set_.reserve(rows);
  words_.reserve(rows * stride_);
  live_.reserve(rows);
}

}  // namespace ps
