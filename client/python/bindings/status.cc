#include "client/python/bindings/status.h"

#include <pybind11/stl.h>

#include <optional>

#include "client/client.h"

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
  // What a worker acts on, beyond code and message (client/client.h).
  py::dict details;
  if (std::optional<MembershipRefusal> refusal = MembershipRefusalOf(status)) {
    static constexpr const char* kReasons[] = {"evicted", "left", "replaced",
                                               "other_job"};
    details["membership"] = kReasons[static_cast<int>(refusal->reason)];
    details["current_step"] = refusal->current_step;
  }
  if (std::optional<PushOutcome> outcome = PushOutcomeOf(status)) {
    details["push_outcome"] = py::dict(
        py::arg("applied") = outcome->applied,
        py::arg("not_applied") = outcome->not_applied,
        py::arg("unknown") = outcome->unknown);
  }
  return from_status(static_cast<int>(status.code()), text, **details);
}

void ThrowStatus(const absl::Status& status) {
  py::object exception = StatusToException(status);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())),
                  exception.ptr());
  throw py::error_already_set();
}

}  // namespace ps::python
