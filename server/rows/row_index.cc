#include "server/rows/row_index.h"

namespace ps {

RowIndex::RowIndex() : set_(0, SlotHash{&ids_}, SlotEq{&ids_}) {}

uint32_t RowIndex::Find(uint64_t id) const {
  auto it = set_.find(IdKey{id});
  return it == set_.end() ? kNoSlot : *it;
}

uint32_t RowIndex::Insert(uint64_t id) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
    ids_[slot] = id;
    live_[slot] = true;
  } else {
    slot = static_cast<uint32_t>(ids_.size());
    if (ids_.size() == ids_.capacity()) {
      // 1.5x rather than the library's 2x: the id array is most of the
      // index's memory (row_cost.h counts on at most 1.5 x 8 bytes).
      ids_.reserve(ids_.capacity() + ids_.capacity() / 2 + 16);
    }
    ids_.push_back(id);
    live_.push_back(true);
  }
  // The id is in place before the set hashes the slot.
  set_.insert(slot);
  return slot;
}

void RowIndex::Remove(uint32_t slot) {
  set_.erase(slot);  // hashes ids_[slot]: erase before it is forgotten
  live_[slot] = false;
  free_.push_back(slot);
}

void RowIndex::PopNewestSlot() {
  set_.erase(static_cast<uint32_t>(ids_.size() - 1));
  ids_.pop_back();
  live_.pop_back();
}

uint64_t RowIndex::AllocatedBytes() const {
  // absl's flat_hash_set holds capacity() slots plus capacity() + 1 + 15
  // control bytes (one group cloned at the end); when empty it holds none.
  const uint64_t table =
      set_.capacity() == 0
          ? 0
          : set_.capacity() * sizeof(uint32_t) + set_.capacity() + 16;
  return table + ids_.capacity() * sizeof(uint64_t) + live_.capacity() / 8 +
         free_.capacity() * sizeof(uint32_t);
}

void RowIndex::Clear() {
  set_.clear();
  ids_.clear();
  live_.clear();
  free_.clear();
}

void RowIndex::Reserve(uint64_t rows) {
  set_.reserve(rows);
  ids_.reserve(rows);
  live_.reserve(rows);
}

}  // namespace ps
