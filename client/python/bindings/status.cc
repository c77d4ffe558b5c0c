#include "client/python/bindings/status.h"

namespace py = pybind11;

namespace ps::python {

py::object StatusToException(const absl::Status& status) {
  // Imported once and kept for the life of the process (never released: a
  // module object outlives every client).
  static py::handle from_status =
      py::object(py::module_::import("ps_client.errors").attr("from_status"))
          .release();
  // The server's message is text, but a malformed one must not turn into a
  // UnicodeDecodeError instead of the real error.
  const absl::string_view message = status.message();
  py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()), "replace"));
  if (!text) throw py::error_already_set();
  return from_status(static_cast<int>(status.code()), text);
}

void ThrowStatus(const absl::Status& status) {
  py::object exception = StatusToException(status);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())),
                  exception.ptr());
  throw py::error_already_set();
}

}  // namespace ps::python
