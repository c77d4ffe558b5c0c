// Bytes that lie in consecutive pieces of memory, e.g. a field of a received
// gRPC message, which arrives in the ~8 KiB slices gRPC read it into. Lets
// the server apply a pushed gradient straight from those slices instead of
// first joining them into one buffer (tests/bench/TRANSPORT_RESULTS.md,
// round 4).
//
// A PiecewiseBytes is a view: it owns neither the bytes nor (for more than
// one piece) the array of pieces; both must outlive it and stay unchanged.
// Pieces may have any alignment and any length; a float or key may straddle
// two of them.
//
// Thread safety: an immutable value type; free functions are reentrant.
#ifndef PS_COMMON_PIECEWISE_BYTES_H_
#define PS_COMMON_PIECEWISE_BYTES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ps {

class PiecewiseBytes {
 public:
  PiecewiseBytes() = default;
  // One contiguous piece (implicit: a string_view is the common case).
  PiecewiseBytes(absl::string_view bytes)  // NOLINT(runtime/explicit)
      : single_(bytes), size_(bytes.size()) {}
  // The concatenation of `pieces`; the array itself is referenced.
  explicit PiecewiseBytes(absl::Span<const absl::string_view> pieces);

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // True when the bytes are one contiguous range (also when empty).
  bool is_flat() const { return pieces_.empty(); }
  // The contiguous range. REQUIRES: is_flat().
  absl::string_view flat() const { return single_; }

  // The pieces in order (the single range when flat).
  absl::Span<const absl::string_view> pieces() const {
    return is_flat() ? absl::Span<const absl::string_view>(&single_, 1)
                     : pieces_;
  }

  // Copies bytes [pos, pos + n) to `dst`. REQUIRES: pos + n <= size().
  void CopyTo(uint64_t pos, uint64_t n, char* dst) const;

  // All bytes as one string (tests, error paths).
  std::string ToString() const;

 private:
  absl::string_view single_;                     // when flat
  absl::Span<const absl::string_view> pieces_;  // when not flat
  uint64_t size_ = 0;
};

// Float32 blocks a host loop can consume straight from a PiecewiseBytes:
// calls visit(first, block) -> absl::Status for consecutive blocks covering
// every whole float in order (a trailing partial float is ignored), where
// `first` is the index of block[0] and each block is 4-byte aligned and at
// most kFloatBlock long. A block is viewed in place when it lies inside one
// piece at an aligned address, otherwise copied into a buffer of
// kFloatBlock floats on the stack (so it is read again from L1, not from
// memory). Stops at and returns the first non-OK status.
inline constexpr uint64_t kFloatBlock = 2048;  // 8 KiB

template <typename Visit>
absl::Status ForEachFloatBlock(const PiecewiseBytes& bytes, Visit&& visit) {
  alignas(64) float bounce[kFloatBlock];
  const uint64_t n = bytes.size() / sizeof(float);
  const absl::Span<const absl::string_view> pieces = bytes.pieces();
  size_t piece = 0;
  uint64_t piece_start = 0;  // byte position of pieces[piece]
  for (uint64_t first = 0; first < n;) {
    const uint64_t pos = first * sizeof(float);
    while (pos >= piece_start + pieces[piece].size()) {
      piece_start += pieces[piece].size();
      ++piece;
    }
    const char* at = pieces[piece].data() + (pos - piece_start);
    const uint64_t in_piece =
        (piece_start + pieces[piece].size() - pos) / sizeof(float);
    uint64_t count = std::min<uint64_t>(kFloatBlock, n - first);
    const float* block;
    if (in_piece > 0 &&
        reinterpret_cast<uintptr_t>(at) % alignof(float) == 0) {
      count = std::min(count, in_piece);
      block = reinterpret_cast<const float*>(at);
    } else {
      // Gather from this piece on (CopyTo would search from the first one).
      char* dst = reinterpret_cast<char*>(bounce);
      uint64_t want = count * sizeof(float);
      uint64_t from = pos - piece_start;
      for (size_t p = piece; want > 0; ++p, from = 0) {
        const uint64_t take = std::min<uint64_t>(want, pieces[p].size() - from);
        std::memcpy(dst, pieces[p].data() + from, take);
        dst += take;
        want -= take;
      }
      block = bounce;
    }
    absl::Status s = visit(first, absl::Span<const float>(block, count));
    if (!s.ok()) return s;
    first += count;
  }
  return absl::OkStatus();
}

}  // namespace ps

#endif  // PS_COMMON_PIECEWISE_BYTES_H_
