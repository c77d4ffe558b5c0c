// A doubly linked list over row slots (RowIndex), most recently touched at
// the front, each entry with an int64 stamp (a clock, seconds, or unused):
// the ordering the eviction policies share. Links are 32-bit slot numbers
// in arrays indexed by slot, so an entry costs 8 bytes (+ 8 for the stamp
// when the list keeps stamps); Touch, Remove and Oldest are O(1).
//
// Thread safety: none; the owner serializes calls.
#ifndef PS_SERVER_ROWS_RECENCY_LIST_H_
#define PS_SERVER_ROWS_RECENCY_LIST_H_

#include <cstdint>
#include <vector>

namespace ps {

class RecencyList {
 public:
  static constexpr uint32_t kNone = ~uint32_t{0};

  // `with_stamps`: whether stamp() is kept (8 more bytes per slot).
  explicit RecencyList(bool with_stamps) : with_stamps_(with_stamps) {}

  // Moves `slot` to the front (inserting it when absent) with `stamp`.
  void Touch(uint32_t slot, int64_t stamp);
  // Takes `slot` out. No-op when absent.
  void Remove(uint32_t slot);

  // The least recently touched slot, or kNone.
  uint32_t Oldest() const { return tail_; }
  // The next more recently touched slot after listed `slot`, or kNone.
  uint32_t Newer(uint32_t slot) const { return prev_[slot]; }
  // The stamp of listed `slot`. REQUIRES: with_stamps.
  int64_t stamp(uint32_t slot) const { return stamps_[slot]; }
  bool contains(uint32_t slot) const {
    return slot < in_list_.size() && in_list_[slot];
  }
  uint64_t size() const { return size_; }

  // Every listed slot, oldest first.
  std::vector<uint32_t> OldestFirst() const;

  void Clear();

 private:
  void Grow(uint32_t slot);
  void Unlink(uint32_t slot);

  const bool with_stamps_;
  // By slot: the neighbour toward the front (prev_) and the back (next_).
  std::vector<uint32_t> prev_;
  std::vector<uint32_t> next_;
  std::vector<int64_t> stamps_;
  std::vector<bool> in_list_;
  uint32_t head_ = kNone;  // most recent
  uint32_t tail_ = kNone;  // least recent
  uint64_t size_ = 0;
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_RECENCY_LIST_H_
