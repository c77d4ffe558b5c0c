// The id -> row map of one sparse shard-table, with a free list of the rows
// evicted ids left behind so a store never grows past its peak row count.
//
// Rows are numbered 0..num_slots()-1 (a ParamStore row index, "slot"); a slot
// is live (holds an id) or free. Insert takes the most recently freed slot
// first (LIFO), else a new one at the end (num_slots() grows by one, so the
// caller appends exactly one store row per new slot, in order).
//
// Each slot is a record of its id and `tags` 32-bit words that the eviction
// rules stamp on every access (eviction.h). The record is what a lookup
// reads to compare ids anyway, so a rule's per-access write lands in a cache
// line the lookup already brought in.
//
// Memory: the map is an absl::flat_hash_set of 4-byte slot numbers hashed
// by the id in their record (a transparent lookup by id), so an entry costs
// 4 bytes plus a 1-byte control word per table slot, instead of the 16 + 1
// of a map from uint64 id to uint64 row; plus the record (8 + 4 x tags
// bytes, in an array grown by 1.5x) and one liveness bit per slot.
// AllocatedBytes() reports what is held. Slots are 32-bit: at most
// kMaxSlots rows per shard-table.
//
// Thread safety: none; the owner serializes calls.
#ifndef PS_SERVER_ROWS_ROW_INDEX_H_
#define PS_SERVER_ROWS_ROW_INDEX_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace ps {

class RowIndex {
 public:
  static constexpr uint32_t kNoSlot = ~uint32_t{0};
  static constexpr uint64_t kMaxSlots = uint64_t{kNoSlot};  // slots < this

  // `tags`: 32-bit words per slot for the eviction rules (0 to 3).
  explicit RowIndex(int tags = 0);
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;

  // The slot of `id`, or kNoSlot.
  uint32_t Find(uint64_t id) const;

  // Puts `id` (absent) in a free slot, or in a new slot num_slots() when
  // none is free; its tags start at 0. REQUIRES: Find(id) == kNoSlot, and a
  // free slot or num_slots() < kMaxSlots.
  uint32_t Insert(uint64_t id);

  // Frees live `slot` (its id is forgotten). REQUIRES: live(slot).
  void Remove(uint32_t slot);

  bool live(uint32_t slot) const { return slot < live_.size() && live_[slot]; }
  // live(slot) for every slot < num_slots(), one bit each.
  const std::vector<bool>& liveness() const { return live_; }
  // The id in live `slot`.
  uint64_t id_at(uint32_t slot) const {
    uint64_t id;
    std::memcpy(&id, &words_[Record(slot)], sizeof(id));
    return id;
  }
  // Tag `t` of `slot`. REQUIRES: slot < num_slots(), t < tags.
  uint32_t tag(uint32_t slot, int t) const { return words_[Record(slot) + 2 + t]; }
  void set_tag(uint32_t slot, int t, uint32_t value) {
    words_[Record(slot) + 2 + t] = value;
  }
  // Asks the CPU to fetch `slot`'s record (slot < num_slots()) for a tag
  // read or write soon: walks over many slots issue it a few slots ahead,
  // so their cache misses overlap instead of stalling one at a time.
  void Prefetch(uint32_t slot) const {
    __builtin_prefetch(words_.data() + Record(slot), /*rw=*/1);
  }

  uint64_t size() const { return set_.size(); }       // live rows
  uint64_t num_slots() const { return live_.size(); }  // live + free
  uint64_t num_free() const { return free_.size(); }

  // Heap bytes held: the hash table's slots and control bytes, the
  // records, the liveness bits and the free list, at their capacities.
  uint64_t AllocatedBytes() const;

  // Drops everything (restore).
  void Clear();
  // Pre-sizes for `rows` rows.
  void Reserve(uint64_t rows);

 private:
  // Hash and equality over slots by the id they hold, with transparent
  // lookups by id (IdKey).
  struct IdKey {
    uint64_t id;
  };
  struct SlotHash {
    using is_transparent = void;
    const RowIndex* index;
    size_t operator()(uint32_t slot) const {
      return absl::Hash<uint64_t>()(index->id_at(slot));
    }
    size_t operator()(IdKey key) const { return absl::Hash<uint64_t>()(key.id); }
  };
  struct SlotEq {
    using is_transparent = void;
    const RowIndex* index;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(uint32_t slot, IdKey key) const {
      return index->id_at(slot) == key.id;
    }
    bool operator()(IdKey key, uint32_t slot) const {
      return index->id_at(slot) == key.id;
    }
  };

  size_t Record(uint32_t slot) const { return size_t{slot} * stride_; }

  const size_t stride_;  // 32-bit words per record: 2 (id) + tags
  std::vector<uint32_t> words_;  // records by slot; meaningful while live
  std::vector<bool> live_;       // by slot
  std::vector<uint32_t> free_;   // free slots, most recently freed last
  absl::flat_hash_set<uint32_t, SlotHash, SlotEq> set_;  // live slots
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_ROW_INDEX_H_
