// Raw little-endian encoding of keys and values on the wire.
//
// The project only targets little-endian hosts (x86-64, aarch64), so encoding
// is a memcpy; the static_assert keeps a big-endian port from silently
// corrupting tensors.
#ifndef PS_COMMON_BYTES_H_
#define PS_COMMON_BYTES_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/types/span.h"

namespace ps {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "wire format is little-endian; add byte swapping for this host");

// Appends `values` as raw bytes to `out`.
template <typename T>
void AppendRaw(absl::Span<const T> values, std::string* out) {
  out->append(reinterpret_cast<const char*>(values.data()),
              values.size() * sizeof(T));
}

template <typename T>
std::string EncodeRaw(absl::Span<const T> values) {
  std::string out;
  AppendRaw(values, &out);
  return out;
}

// Number of T elements in `bytes`, or -1 when its length is not a multiple.
template <typename T>
int64_t RawCount(const std::string& bytes) {
  if (bytes.size() % sizeof(T) != 0) return -1;
  return static_cast<int64_t>(bytes.size() / sizeof(T));
}

// Views `bytes` as T elements. REQUIRES: RawCount<T>(bytes) >= 0. The view is
// valid while `bytes` lives and is unchanged. std::string storage is aligned
// for any fundamental type by operator new (>= 16 bytes); small-string storage
// inside the object is 8-aligned, enough for float and uint64.
template <typename T>
absl::Span<const T> ViewRaw(const std::string& bytes) {
  return absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()),
                             bytes.size() / sizeof(T));
}

// n elements of arbitrary value, for a caller that overwrites every one
// before reading it (a decode, a sum, a read into it): allocated without the
// zero-fill of std::vector::resize, a pass over every byte (a half-precision
// push's server CPU exceeded a float32 push's of twice the bytes with it).
template <typename T>
std::unique_ptr<T[]> UninitializedArray(size_t n) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  return std::unique_ptr<T[]>(new T[n]);
}

}  // namespace ps

#endif  // PS_COMMON_BYTES_H_
