// ps_client.Future: a ps::Future plus the Python objects its request needs.
//
// The C++ client writes a pull's result into the caller's out-buffer and, for
// the zero-copy pushes, reads the gradients from the caller's buffer until
// the request completes. A PyFuture holds those buffers (HeldBuffer; or the
// result array itself, when the binding allocated it), so they live at least
// as long as the request:
//   - normally the PyFuture outlives the request (the caller waits on it);
//   - a PyFuture dropped while its request is still in flight passes the
//     buffers to a completion callback, which releases them (taking the GIL)
//     when the request completes.
//
// Thread safety: every method is called with the GIL held (pybind11); Wait()
// releases it while it blocks. Callbacks registered by AddDoneCallback run on
// the thread that completes the request (a thread waiting on a future of the
// same client, or the client's background thread), with the GIL taken there.
#ifndef PS_CLIENT_PYTHON_BINDINGS_PY_FUTURE_H_
#define PS_CLIENT_PYTHON_BINDINGS_PY_FUTURE_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "client/client.h"
#include "client/python/bindings/buffer.h"

namespace ps::python {

class PyFuture {
 public:
  // `result` is what wait() returns on success (the out-buffer's object, or
  // None); `held` are the buffers the request reads or writes. A result that
  // is not None is kept alive until the request ends, like `held`.
  PyFuture(Future future, pybind11::object result,
           std::vector<HeldBuffer> held);
  ~PyFuture();

  PyFuture(const PyFuture&) = delete;
  PyFuture& operator=(const PyFuture&) = delete;

  // Blocks (GIL released) until the request completes; returns `result` or
  // raises the status family's ps_client exception.
  pybind11::object Wait();
  bool Done() const { return future_.Ready(); }
  // Waits; returns the exception wait() would raise, or None.
  pybind11::object Exception();
  // Runs `fn(self)` once the request completes (at once if it has). An
  // exception raised by `fn` goes to sys.unraisablehook.
  static void AddDoneCallback(pybind11::object self, pybind11::function fn);

 private:
  absl::Status WaitReleased() const;

  Future future_;
  pybind11::object result_;
  std::vector<HeldBuffer> held_;
};

}  // namespace ps::python

#endif  // PS_CLIENT_PYTHON_BINDINGS_PY_FUTURE_H_
