// The id -> row map of one sparse shard-table, with a free list of the rows
// evicted ids left behind so a store never grows past its peak row count.
//
// Rows are numbered 0..num_slots()-1 (a ParamStore row index, "slot"); a slot
// is live (holds an id) or free. Insert takes the most recently freed slot
// first (LIFO), else a new one at the end (num_slots() grows by one, so the
// caller appends exactly one store row per new slot, in order).
//
// Memory: the map is an absl::flat_hash_set of 4-byte slot numbers hashed
// by the id they hold (ids_[slot]; a transparent lookup by id), so an entry
// costs 4 bytes plus a 1-byte control word per table slot, instead of the
// 16 + 1 of a map from uint64 id to uint64 row; plus 8 bytes per slot for
// the id and one bit for liveness. AllocatedBytes() reports what is held.
// Slots are 32-bit: at most kMaxSlots rows per shard-table.
//
// Thread safety: none; the owner serializes calls.
#ifndef PS_SERVER_ROWS_ROW_INDEX_H_
#define PS_SERVER_ROWS_ROW_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace ps {

class RowIndex {
 public:
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  static constexpr uint64_t kMaxSlots = uint64_t{kNoSlot};  // slots < this

  RowIndex();
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;

  // The slot of `id`, or kNoSlot.
  uint32_t Find(uint64_t id) const;

  // Puts `id` (absent) in a free slot, or in a new slot num_slots() when
  // none is free. REQUIRES: Find(id) == kNoSlot, and a free slot or
  // num_slots() < kMaxSlots.
  uint32_t Insert(uint64_t id);

  // Frees live `slot` (its id is forgotten). REQUIRES: live(slot).
  void Remove(uint32_t slot);

  // Undoes the Insert that created new slot num_slots() - 1: the slot
  // disappears (a failed store append). REQUIRES: it is live.
  void PopNewestSlot();

  bool live(uint32_t slot) const { return slot < live_.size() && live_[slot]; }
  // The id in live `slot`.
  uint64_t id_at(uint32_t slot) const { return ids_[slot]; }

  uint64_t size() const { return set_.size(); }       // live rows
  uint64_t num_slots() const { return ids_.size(); }  // live + free
  uint64_t num_free() const { return free_.size(); }

  // Heap bytes held: the hash table's slots and control bytes, the ids, the
  // liveness bits and the free list, at their current capacities.
  uint64_t AllocatedBytes() const;

  // Drops everything and pre-sizes for `rows` (restore).
  void Clear();
  void Reserve(uint64_t rows);

 private:
  // Hash and equality over slots by the id they hold, with transparent
  // lookups by id (IdKey).
  struct IdKey {
    uint64_t id;
  };
  struct SlotHash {
    using is_transparent = void;
    const std::vector<uint64_t>* ids;
    size_t operator()(uint32_t slot) const {
      return absl::Hash<uint64_t>()((*ids)[slot]);
    }
    size_t operator()(IdKey key) const { return absl::Hash<uint64_t>()(key.id); }
  };
  struct SlotEq {
    using is_transparent = void;
    const std::vector<uint64_t>* ids;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t slot, IdKey key) const {
      return (*ids)[slot] == key.id;
    }
    bool operator()(IdKey key, uint32_t slot) const {
      return (*ids)[slot] == key.id;
    }
  };

  std::vector<uint64_t> ids_;   // by slot; meaningful while live
  std::vector<bool> live_;      // by slot
  std::vector<uint32_t> free_;  // free slots, most recently freed last
  absl::flat_hash_set<uint32_t, SlotHash, SlotEq> set_;  // live slots
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_ROW_INDEX_H_
