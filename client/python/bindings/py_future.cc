#include "client/python/bindings/py_future.h"

#include <utility>

#include "client/python/bindings/bindings.h"
#include "client/python/bindings/status.h"

namespace py = pybind11;

namespace ps::python {
namespace {

// Python objects owned by a C++ completion callback, which may be destroyed
// on a thread without the GIL: they are released with the GIL taken.
struct GilOwned {
  py::object fn;
  py::object future;
  py::object result;
  std::vector<HeldBuffer> held;

  // REQUIRES: the GIL.
  void Release() {
    fn = py::object();
    future = py::object();
    result = py::object();
    held.clear();
  }
  ~GilOwned() {
    if (!fn && !future && !result && held.empty()) return;
    py::gil_scoped_acquire gil;
    Release();
  }
};

}  // namespace

PyFuture::PyFuture(Future future, py::object result,
                   std::vector<HeldBuffer> held)
    : future_(std::move(future)),
      result_(std::move(result)),
      held_(std::move(held)) {}

PyFuture::~PyFuture() {
  if (future_.Ready() || (held_.empty() && result_.is_none())) return;
  // Dropped in flight: the request still uses the buffers (or writes into
  // the result, when the binding allocated it).
  auto owned = std::make_shared<GilOwned>();
  owned->result = std::move(result_);
  owned->held = std::move(held_);
  future_.Then([owned](const absl::Status&) {
    py::gil_scoped_acquire gil;
    owned->Release();
  });
}

absl::Status PyFuture::WaitReleased() const {
  py::gil_scoped_release release;
  return future_.Wait();
}

py::object PyFuture::Wait() {
  ThrowIfError(WaitReleased());
  return result_;
}

py::object PyFuture::Exception() {
  const absl::Status status = WaitReleased();
  return status.ok() ? py::none() : StatusToException(status);
}

void PyFuture::AddDoneCallback(py::object self, py::function fn) {
  auto owned = std::make_shared<GilOwned>();
  owned->fn = std::move(fn);
  owned->future = self;
  self.cast<PyFuture&>().future_.Then([owned](const absl::Status&) {
    py::gil_scoped_acquire gil;
    try {
      owned->fn(owned->future);
    } catch (py::error_already_set& error) {
      error.discard_as_unraisable("ps_client.Future done callback");
    }
    owned->Release();
  });
}



void BindFuture(py::module_& m) {
  py::class_<PyFuture>(m, "Future",
                       "Completion handle of one request (every data call "
                       "returns one).")
      .def("wait", &PyFuture::Wait,
           "Blocks until the request completes (the GIL is released "
           "meanwhile). Returns the result (a pull's output array; None for "
           "a push) or raises the status family's ps_client.errors "
           "exception.")
      .def("result", &PyFuture::Wait, "Same as wait().")
      .def("done", &PyFuture::Done, "True once the request completed.")
      .def("exception", &PyFuture::Exception,
           "Waits; returns the exception wait() would raise, or None.")
      .def("add_done_callback", &PyFuture::AddDoneCallback, py::arg("fn"),
                  "Calls fn(future) once the request completes: at once if "
                  "it has, else on the thread that completes it (with the "
                  "GIL; keep fn short and never wait() on another future in "
                  "it). An exception raised by fn goes to "
                  "sys.unraisablehook.");
}
}  // namespace ps::python
