// Element types of table values: one unit per type says its size, how it is
// converted to and from float32 (the one representation inside the server's
// stores and the client's spans) and how its encoded bytes are checked for
// NaN / Inf. Values travel little-endian.
//
// Master weights and optimizer state are always float32; a table's wire
// value type is what its pushes and pulls carry, converted at the client
// and ShardTable edges (TableConfig::value_type). Adding a type: an enum
// value, one entry in value_type.cc, and its proto enum value.
//
// Thread safety: immutable data and pure functions.
#ifndef PS_COMMON_VALUE_TYPE_H_
#define PS_COMMON_VALUE_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/piecewise_bytes.h"

namespace ps {

enum class ValueType { kFloat32, kFloat16, kBfloat16 };

struct ValueTypeInfo {
  ValueType type;
  const char* name;  // in YAML and messages
  const char* doc;
  size_t bytes;  // per element
  // Writes in.size() elements (round to nearest even; NaN stays NaN, values
  // beyond the type's range become +-Inf) to out[0, in.size() * bytes).
  void (*encode)(absl::Span<const float> in, char* out);
  // Reads in.size() / bytes elements from `in` (any alignment) into out.
  void (*decode)(absl::string_view in, float* out);
  // Whether every whole element of `in` is finite (no NaN, no Inf).
  bool (*all_finite)(absl::string_view in);
};

const ValueTypeInfo& InfoOf(ValueType type);
// Whether `value` (e.g. a proto::ValueType a peer sent) names a ValueType.
bool IsValueType(int value);
absl::Span<const ValueTypeInfo> AllValueTypes();
const char* ValueTypeName(ValueType type);
std::vector<std::string> ValueTypeNames();

// Whether every element of `bytes` (of `type`, possibly spread over pieces
// at any split) is finite.
bool AllFinite(ValueType type, const PiecewiseBytes& bytes);
// Decodes the bytes.size() / bytes-per-element elements of `bytes` (of
// `type`, possibly spread over pieces at any split) into out, in order.
void Decode(ValueType type, const PiecewiseBytes& bytes, float* out);
// Index of the first non-finite element of contiguous `bytes`, or -1.
int64_t FirstNonFinite(ValueType type, absl::string_view bytes);

// The float32 scan (vectorized, one early exit per 4 KiB), also used
// directly on the hot receive path.
bool AllFiniteFloats(absl::string_view bytes);
bool AllFiniteFloats(const PiecewiseBytes& bytes);
int64_t FirstNonFiniteFloat(absl::string_view bytes);

}  // namespace ps

#endif  // PS_COMMON_VALUE_TYPE_H_
