// The soak test's workload shape, shared by the test and its helper process
// (soak_client.cc): the two async tables and the sparse key set.
#ifndef PS_TESTS_SOAK_SOAK_WORKLOAD_H_
#define PS_TESTS_SOAK_SOAK_WORKLOAD_H_

#include <cstdint>

namespace ps::soak {

inline constexpr uint32_t kDenseTable = 0;   // "dense": kDenseSize floats
inline constexpr uint32_t kSparseTable = 1;  // "emb": rows of kDim floats
inline constexpr int kDenseSize = 1000;
inline constexpr int kDim = 8;
inline constexpr int kNumKeys = 512;

// The i-th sparse key, i in [0, kNumKeys): spread over the key space.
inline uint64_t KeyOf(int i) { return 0x9E3779B97F4A7C15ull * (i + 1); }

}  // namespace ps::soak

#endif  // PS_TESTS_SOAK_SOAK_WORKLOAD_H_
