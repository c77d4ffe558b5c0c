// Deterministic initial values of table elements.
//
// A value never depends on which shard creates it, on the number of shards,
// or on the order rows are created:
//  - sparse row of id `id`: its `dim` values are the first `dim` draws of a
//    std::mt19937_64 seeded with XXH64(id as 8 little-endian bytes, seed);
//  - dense element at global offset `e`: draw number (e % kDenseInitBlock) of
//    a std::mt19937_64 seeded with XXH64(e / kDenseInitBlock, seed).
// A draw is: zeros 0; constant `value`; uniform low + (high - low) * u with
// u = (next() >> 11) * 2^-53 in [0, 1); normal mean + stddev * z with z from
// Box-Muller over two such draws (u1 taken in (0, 1], cosine branch only).
// The formulas are spelled out (not std:: distributions, whose algorithms
// differ between standard libraries) so any process reproduces them.
//
// Thread safety: pure functions.
#ifndef PS_SERVER_INITIALIZER_H_
#define PS_SERVER_INITIALIZER_H_

#include <cstdint>

#include "absl/types/span.h"
#include "common/config.h"

namespace ps {

inline constexpr uint64_t kDenseInitBlock = 4096;

// Fills `out` with the initial values of dense elements
// [begin, begin + out.size()) (global offsets).
void InitDenseRange(const InitializerConfig& init, uint64_t begin,
                    absl::Span<float> out);

// Fills `out` (dim values) with the initial row of sparse id `id`.
void InitSparseRow(const InitializerConfig& init, uint64_t id,
                   absl::Span<float> out);

}  // namespace ps

#endif  // PS_SERVER_INITIALIZER_H_
