#include "common/piecewise_bytes.h"

namespace ps {

PiecewiseBytes::PiecewiseBytes(absl::Span<const absl::string_view> pieces) {
  for (absl::string_view piece : pieces) size_ += piece.size();
  if (pieces.size() == 1) {
    single_ = pieces[0];
  } else if (pieces.size() > 1) {
    pieces_ = pieces;
  }
}

void PiecewiseBytes::CopyTo(uint64_t pos, uint64_t n, char* dst) const {
  for (absl::string_view piece : pieces()) {
    if (n == 0) return;
    if (pos >= piece.size()) {
      pos -= piece.size();
      continue;
    }
    const uint64_t take = std::min<uint64_t>(n, piece.size() - pos);
    std::memcpy(dst, piece.data() + pos, take);
    dst += take;
    n -= take;
    pos = 0;
  }
}

std::string PiecewiseBytes::ToString() const {
  std::string out(size_, '\0');
  CopyTo(0, size_, out.data());
  return out;
}

}  // namespace ps
