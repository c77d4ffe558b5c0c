// Python buffers (numpy arrays, torch CPU tensors, anything exporting PEP 3118
// buffers) seen as spans of the C++ client, without copies.
//
// Thread safety: create and destroy with the GIL held; the spans may be read
// and written without it while the HeldBuffer lives.
#ifndef PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_
#define PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <utility>

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
    return absl::Span<float>(static_cast<float*>(view_->buf),
                             static_cast<size_t>(view_->len) / sizeof(float));
  }
  // The buffer's shape (empty for a scalar).
  absl::Span<const Py_ssize_t> shape() const {
    return view_->shape == nullptr
               ? absl::Span<const Py_ssize_t>()
               : absl::Span<const Py_ssize_t>(view_->shape,
                                              static_cast<size_t>(view_->ndim));
  }
  absl::Span<const uint64_t> keys() const {
    return absl::Span<const uint64_t>(
        static_cast<const uint64_t*>(view_->buf),
        static_cast<size_t>(view_->len) / sizeof(uint64_t));
  }

  // Releases an export (PyBuffer_Release) and frees its Py_buffer.
  struct Release {
    void operator()(Py_buffer* view) const;
  };

 private:
  explicit HeldBuffer(std::unique_ptr<Py_buffer, Release> view)
      : view_(std::move(view)) {}

  // The export itself, at a fixed address (an exporter may point the view's
  // shape into it), and nothing else: pybind11::buffer_info would copy its
  // shape, strides and format on every data call.
  std::unique_ptr<Py_buffer, Release> view_;
};

}  // namespace ps::python

#endif  // PS_CLIENT_PYTHON_BINDINGS_BUFFER_H_
