#include "common/value_type.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ps {
namespace {

// ---------------------------------------------------------------------------
// float32

// Floats per block of the finiteness scan: a fixed trip count so gcc -O2's
// "very cheap" vectorizer turns the inner loop into SIMD code.
constexpr size_t kFiniteBlock = 64;

inline uint32_t LoadBits(const char* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof(bits));  // any alignment, no UB
  return bits;
}

inline bool IsNonFinite(uint32_t bits) {
  return (bits & 0x7f800000u) == 0x7f800000u;
}

// Nonzero when some float of the block has an all-ones exponent (inf/nan).
inline uint32_t BlockNonFinite(const char* p) {
  uint32_t bad = 0;
  for (size_t i = 0; i < kFiniteBlock; ++i) {
    bad |= (LoadBits(p + 4 * i) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  return bad;
}

void EncodeFloat32(absl::Span<const float> in, char* out) {
  if (!in.empty()) std::memcpy(out, in.data(), in.size() * sizeof(float));
}

void DecodeFloat32(absl::string_view in, float* out) {
  if (!in.empty()) std::memcpy(out, in.data(), in.size() / 4 * 4);
}

// ---------------------------------------------------------------------------
// float16 (IEEE 754 binary16) and bfloat16, by bit manipulation so the loops
// vectorize (no per-element library calls).

inline uint32_t FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): add 0.5 so the float adder rounds to
    // nearest even at the half's last subnormal bit.
    const float magic = BitsFloat(0x3f000000u);  // 0.5
    const uint32_t r = FloatBits(BitsFloat(abs) + magic) - FloatBits(magic);
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits
  // to nearest even.
  const uint32_t odd = (abs >> 13) & 1u;
  const uint32_t r = (abs + 0xc8000fffu + odd) >> 13;
  return static_cast<uint16_t>(sign | r);
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = static_cast<float>(mant) * BitsFloat(0x33800000u);
    return BitsFloat(sign | FloatBits(v));
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t FloatToBfloat16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  }
  // Round to nearest even on the 16 dropped bits (overflow gives Inf).
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float Bfloat16ToFloat(uint16_t b) {
  return BitsFloat(static_cast<uint32_t>(b) << 16);
}

inline uint16_t Load16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <uint16_t (*kConvert)(float)>
void Encode16(absl::Span<const float> in, char* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t v = kConvert(in[i]);
    std::memcpy(out + 2 * i, &v, sizeof(v));
  }
}

// Values per block of Decode16: a fixed trip count, so gcc -O2's "very
// cheap" vectorizer turns bfloat16's block loop into SIMD code (a loop over
// the whole span stayed scalar: 0.54 ns per value, against 0.10 now).
constexpr size_t kDecodeBlock = 64;

template <float (*kConvert)(uint16_t)>
void Decode16(absl::string_view in, float* out) {
  const size_t n = in.size() / 2;
  size_t i = 0;
  for (; i + kDecodeBlock <= n; i += kDecodeBlock) {
    uint16_t block[kDecodeBlock];
    std::memcpy(block, in.data() + 2 * i, sizeof(block));
    for (size_t j = 0; j < kDecodeBlock; ++j) out[i + j] = kConvert(block[j]);
  }
  for (; i < n; ++i) out[i] = kConvert(Load16(in.data() + 2 * i));
}

#if defined(__x86_64__)
// float16 by the F16C instructions where the CPU has them (x86-64 since
// 2012): 8 values per instruction, round to nearest even with subnormals and
// overflow to Inf exactly as FloatToHalf / HalfToFloat (value_type_test
// compares them over every half and a spread of floats); a NaN stays a NaN,
// its payload bits may differ. Elsewhere the scalar loops above. 0.07 ns
// per value either way, against 0.97 for the scalar loops.
__attribute__((target("avx,f16c"))) void EncodeHalfF16c(
    absl::Span<const float> in, char* out) {
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(in.data() + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
  }
  Encode16<FloatToHalf>(in.subspan(i), out + 2 * i);
}

__attribute__((target("avx,f16c"))) void DecodeHalfF16c(absl::string_view in,
                                                        float* out) {
  const size_t n = in.size() / 2;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + 2 * i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  Decode16<HalfToFloat>(in.substr(2 * i), out + i);
}

// FloatToBfloat16, 8 values at a time with SSE2 (every x86-64 CPU): gcc
// -O2 leaves the scalar loop unvectorized (0.79 ns per value; 0.25-0.65
// here, depending on where the buffers fall).
void EncodeBfloat16Sse2(absl::Span<const float> in, char* out) {
  const __m128i lsb = _mm_set1_epi32(1);
  const __m128i bias = _mm_set1_epi32(0x7fff);
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128i inf = _mm_set1_epi32(0x7f800000);
  const __m128i quiet = _mm_set1_epi32(0x40);
  auto convert4 = [&](const float* p) {
    const __m128i x = _mm_castps_si128(_mm_loadu_ps(p));
    const __m128i rounded = _mm_srli_epi32(
        _mm_add_epi32(_mm_add_epi32(x, bias),
                      _mm_and_si128(_mm_srli_epi32(x, 16), lsb)),
        16);
    const __m128i nan = _mm_cmpgt_epi32(_mm_and_si128(x, abs_mask), inf);
    const __m128i quiet_nan = _mm_or_si128(_mm_srli_epi32(x, 16), quiet);
    const __m128i v = _mm_or_si128(_mm_and_si128(nan, quiet_nan),
                                   _mm_andnot_si128(nan, rounded));
    // Sign-extend the low 16 bits so the saturating pack keeps them exact.
    return _mm_srai_epi32(_mm_slli_epi32(v, 16), 16);
  };
  size_t i = 0;
  for (; i + 8 <= in.size(); i += 8) {
    const __m128i packed =
        _mm_packs_epi32(convert4(in.data() + i), convert4(in.data() + i + 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), packed);
  }
  Encode16<FloatToBfloat16>(in.subspan(i), out + 2 * i);
}

// Eight floats as bfloat16, each in the low 16 bits of its 32-bit lane
// (0..0xffff): the same integer steps as EncodeBfloat16Sse2.
__attribute__((target("avx2"))) inline __m256i Bfloat16Lanes(const float* p) {
  const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(p));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(
          _mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
          _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1))),
      16);
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                         _mm256_set1_epi32(0x7f800000));
  const __m256i quiet_nan =
      _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet_nan, nan);
}

// bfloat16 16 values at a time with AVX2, twice the SSE2 loop's width (with
// SSE2 the main job's conversions took 6.7% of its CPU, 0.46 ns per value).
__attribute__((target("avx2"))) void EncodeBfloat16Avx2(
    absl::Span<const float> in, char* out) {
  size_t i = 0;
  for (; i + 16 <= in.size(); i += 16) {
    // packus works within 128-bit lanes (a, b -> a0 b0 a1 b1 in quarters);
    // the permute puts the quarters back in order.
    const __m256i packed = _mm256_packus_epi32(Bfloat16Lanes(in.data() + i),
                                               Bfloat16Lanes(in.data() + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i),
                        _mm256_permute4x64_epi64(packed, 0xd8));
  }
  EncodeBfloat16Sse2(in.subspan(i), out + 2 * i);
}

__attribute__((target("avx2"))) void DecodeBfloat16Avx2(absl::string_view in,
                                                        float* out) {
  const size_t n = in.size() / 2;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + 2 * i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  Decode16<Bfloat16ToFloat>(in.substr(2 * i), out + i);
}

// CPUID, not __builtin_cpu_supports("f16c"), which clang (the fuzzers'
// compiler) does not know. Whether the OS saves the AVX registers
// (OSXSAVE, and XCR0's SSE and AVX bits).
bool OsSavesAvx() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  unsigned xcr0_low, xcr0_high;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  return (xcr0_low & 6u) == 6u;
}

// The CPU has AVX and F16C, and the OS saves the AVX registers.
bool HasF16c() {
  static const bool has = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    return (c & bit_F16C) && (c & bit_AVX) && OsSavesAvx();
  }();
  return has;
}

// The CPU has AVX2, and the OS saves the AVX registers.
bool HasAvx2() {
  static const bool has = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & bit_AVX2) && OsSavesAvx();
  }();
  return has;
}

void EncodeBfloat16(absl::Span<const float> in, char* out) {
  if (HasAvx2()) {
    EncodeBfloat16Avx2(in, out);
  } else {
    EncodeBfloat16Sse2(in, out);
  }
}

void DecodeBfloat16(absl::string_view in, float* out) {
  if (HasAvx2()) {
    DecodeBfloat16Avx2(in, out);
  } else {
    Decode16<Bfloat16ToFloat>(in, out);
  }
}

void EncodeHalf(absl::Span<const float> in, char* out) {
  if (HasF16c()) {
    EncodeHalfF16c(in, out);
  } else {
    Encode16<FloatToHalf>(in, out);
  }
}

void DecodeHalf(absl::string_view in, float* out) {
  if (HasF16c()) {
    DecodeHalfF16c(in, out);
  } else {
    Decode16<HalfToFloat>(in, out);
  }
}
#else  // other CPUs: the scalar loops
void EncodeHalf(absl::Span<const float> in, char* out) {
  Encode16<FloatToHalf>(in, out);
}
void DecodeHalf(absl::string_view in, float* out) {
  Decode16<HalfToFloat>(in, out);
}
void EncodeBfloat16(absl::Span<const float> in, char* out) {
  Encode16<FloatToBfloat16>(in, out);
}
void DecodeBfloat16(absl::string_view in, float* out) {
  Decode16<Bfloat16ToFloat>(in, out);
}
#endif

// Whether every whole 16-bit element of `in` is finite (exponent not all
// ones), in blocks of kFiniteBlock so gcc -O2 vectorizes the inner loop (a
// loop over the whole span stayed scalar: 2.3% of the main job's CPU with
// bfloat16 values, twice the float32 scan's share for half the bytes).
template <uint16_t kExponentMask>
bool AllFinite16(absl::string_view in) {
  const char* p = in.data();
  const size_t n = in.size() / 2;
  size_t i = 0;
  uint32_t bad = 0;
  for (; i + kFiniteBlock <= n; i += kFiniteBlock) {
    uint16_t block[kFiniteBlock];
    std::memcpy(block, p + 2 * i, sizeof(block));
    for (size_t j = 0; j < kFiniteBlock; ++j) {
      bad |= (block[j] & kExponentMask) == kExponentMask ? 1u : 0u;
    }
    if (bad != 0) return false;
  }
  for (; i < n; ++i) {
    bad |= (Load16(p + 2 * i) & kExponentMask) == kExponentMask ? 1u : 0u;
  }
  return bad == 0;
}

constexpr ValueTypeInfo kTypes[] = {
    {ValueType::kFloat32, "float32", "IEEE 754 single precision (4 bytes)", 4,
     &EncodeFloat32, &DecodeFloat32, &AllFiniteFloats},
    {ValueType::kFloat16, "float16",
     "IEEE 754 half precision (2 bytes; 11-bit significand, max 65504)", 2,
     &EncodeHalf, &DecodeHalf, &AllFinite16<0x7c00u>},
    {ValueType::kBfloat16, "bfloat16",
     "bfloat16 (2 bytes; float32's range, 8-bit significand)", 2,
     &EncodeBfloat16, &DecodeBfloat16,
     &AllFinite16<0x7f80u>},
};

}  // namespace

const ValueTypeInfo& InfoOf(ValueType type) {
  for (const ValueTypeInfo& t : kTypes) {
    if (t.type == type) return t;
  }
  std::abort();  // every enum value has an entry (value_type_test)
}

bool IsValueType(int value) {
  for (const ValueTypeInfo& t : kTypes) {
    if (static_cast<int>(t.type) == value) return true;
  }
  return false;
}

absl::Span<const ValueTypeInfo> AllValueTypes() { return kTypes; }

const char* ValueTypeName(ValueType type) { return InfoOf(type).name; }

std::vector<std::string> ValueTypeNames() {
  std::vector<std::string> names;
  for (const ValueTypeInfo& t : kTypes) names.push_back(t.name);
  return names;
}

namespace {

// Calls visit(run, first) for consecutive runs of whole elements of
// `elem_bytes` covering `bytes` in order (`first`: the run's first element
// index): each piece's whole elements in place, an element split across
// pieces joined in a small buffer first. Stops early when visit returns
// false; returns whether it never did.
template <typename Visit>
bool ForEachElementRun(const PiecewiseBytes& bytes, size_t elem_bytes,
                       Visit visit) {
  if (bytes.is_flat()) return visit(bytes.flat(), size_t{0});
  char carry[8];
  size_t carried = 0;
  size_t first = 0;  // elements visited so far
  for (absl::string_view piece : bytes.pieces()) {
    if (carried > 0) {
      const size_t take = std::min(elem_bytes - carried, piece.size());
      std::memcpy(carry + carried, piece.data(), take);
      carried += take;
      piece.remove_prefix(take);
      if (carried < elem_bytes) continue;
      if (!visit(absl::string_view(carry, elem_bytes), first)) return false;
      ++first;
      carried = 0;
    }
    const size_t whole = piece.size() / elem_bytes;
    if (whole > 0 && !visit(piece.substr(0, whole * elem_bytes), first)) {
      return false;
    }
    first += whole;
    carried = piece.size() - whole * elem_bytes;
    std::memcpy(carry, piece.data() + whole * elem_bytes, carried);
  }
  return true;
}

}  // namespace

bool AllFinite(ValueType type, const PiecewiseBytes& bytes) {
  const ValueTypeInfo& info = InfoOf(type);
  return ForEachElementRun(bytes, info.bytes,
                           [&info](absl::string_view run, size_t) {
                             return info.all_finite(run);
                           });
}

void Decode(ValueType type, const PiecewiseBytes& bytes, float* out) {
  const ValueTypeInfo& info = InfoOf(type);
  ForEachElementRun(bytes, info.bytes,
                    [&info, out](absl::string_view run, size_t first) {
                      info.decode(run, out + first);
                      return true;
                    });
}

int64_t FirstNonFinite(ValueType type, absl::string_view bytes) {
  const ValueTypeInfo& info = InfoOf(type);
  const size_t n = bytes.size() / info.bytes;
  for (size_t i = 0; i < n; ++i) {
    if (!info.all_finite(bytes.substr(i * info.bytes, info.bytes))) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

bool AllFiniteFloats(absl::string_view bytes) {
  const char* p = bytes.data();
  const size_t n = bytes.size() / 4;
  size_t i = 0;
  // Blocks of 64 floats; one early-exit test per 4 KiB so a bad request
  // fails fast without a branch per element.
  for (; i + 16 * kFiniteBlock <= n; i += 16 * kFiniteBlock) {
    uint32_t bad = 0;
    for (size_t b = 0; b < 16; ++b) {
      bad |= BlockNonFinite(p + 4 * (i + b * kFiniteBlock));
    }
    if (bad != 0) return false;
  }
  uint32_t bad = 0;
  for (; i + kFiniteBlock <= n; i += kFiniteBlock) bad |= BlockNonFinite(p + 4 * i);
  for (; i < n; ++i) bad |= IsNonFinite(LoadBits(p + 4 * i)) ? 1u : 0u;
  return bad == 0;
}

bool AllFiniteFloats(const PiecewiseBytes& bytes) {
  return AllFinite(ValueType::kFloat32, bytes);
}

int64_t FirstNonFiniteFloat(absl::string_view bytes) {
  const size_t n = bytes.size() / 4;
  for (size_t i = 0; i < n; ++i) {
    if (IsNonFinite(LoadBits(bytes.data() + 4 * i))) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

}  // namespace ps
