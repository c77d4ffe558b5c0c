// The part of a sparse push that lands on stored rows: with admission, some
// ids of a push have no row (SparseRows::kNoRow) and their gradients only
// counted; the consistency policy and the store see the rest as a request
// of its own.
//
// Thread safety: plain data.
#ifndef PS_SERVER_ROWS_ADMITTED_PUSH_H_
#define PS_SERVER_ROWS_ADMITTED_PUSH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "proto/data_request_view.h"

namespace ps {

class AdmittedPush {
 public:
  // `push`'s keys whose `rows` entry is not kNoRow, with their values (dim
  // elements of `push.value_type` each, `element_bytes` bytes per element).
  // REQUIRES: rows.size() == number of keys; `push` outlives this object
  // only as far as its scalar fields go (keys and values are copied).
  AdmittedPush(const DataRequestView& push, absl::Span<const uint64_t> rows,
               uint32_t dim, size_t element_bytes);

  AdmittedPush(const AdmittedPush&) = delete;
  AdmittedPush& operator=(const AdmittedPush&) = delete;

  // The request with only the admitted keys and values (views into this
  // object). Its values are known finite when the original's were.
  const DataRequestView& view() const { return view_; }
  const std::vector<uint64_t>& rows() const { return rows_; }
  bool empty() const { return rows_.empty(); }

 private:
  std::string keys_;
  std::string values_;
  std::vector<uint64_t> rows_;
  DataRequestView view_;
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_ADMITTED_PUSH_H_
