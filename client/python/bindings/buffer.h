// Python buffers (numpy arrays, torch CPU tensors, anything exporting PEP 3118
// buffers) seen as spans of the C++ client, without copies.
//
// Thread safety: create and destroy with the GIL held; the spans may be read
// and written without it while the HeldBuffer lives.
#ifndef PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_
#define PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_

#include <pybind11/pybind11.h>

#include <cstdint>

#include "absl/types/span.h"

namespace ps::python {

// One exported buffer. While it lives, the exporting object stays alive and
// its memory may neither move nor be resized (PEP 3118), which is what the
// C++ client needs of an out-buffer until the request's future completes.
class HeldBuffer {
 public:
  // A C-contiguous float32 buffer of any shape (`writable` for out-buffers).
  // An object without the buffer protocol whose __array__() returns one (a
  // torch CPU tensor: Tensor.__array__ is a view of its storage) is accepted
  // too. TypeError names `what` and the expected type otherwise.
  static HeldBuffer Floats(pybind11::handle obj, bool writable,
                           const char* what);
  // A C-contiguous buffer of 8-byte integers: uint64, or int64 reinterpreted
  // as uint64 (torch has no uint64; a negative id becomes 2^64 + id).
  static HeldBuffer Keys(pybind11::handle obj, const char* what);

  absl::Span<float> floats() const {
    return absl::Span<float>(static_cast<float*>(info_.ptr),
                             static_cast<size_t>(info_.size));
  }
  absl::Span<const uint64_t> keys() const {
    return absl::Span<const uint64_t>(static_cast<const uint64_t*>(info_.ptr),
                                      static_cast<size_t>(info_.size));
  }

 private:
  explicit HeldBuffer(pybind11::buffer_info info) : info_(std::move(info)) {}

  pybind11::buffer_info info_;  // owns the Py_buffer export
};

}  // namespace ps::python

#endif  // PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_
