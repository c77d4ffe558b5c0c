#include "client/python/bindings/buffer.h"

#include <string>

namespace py = pybind11;

namespace ps::python {
namespace {

// The struct-module format character of `format`, without a byte-order or
// alignment prefix ('@', '=', '<'; our platform is little-endian).
char FormatChar(const std::string& format) {
  if (format.size() == 1) return format[0];
  if (format.size() == 2 &&
      (format[0] == '@' || format[0] == '=' || format[0] == '<')) {
    return format[1];
  }
  return '\0';
}

[[noreturn]] void ThrowWrongBuffer(py::handle obj, const char* what,
                                   const char* expected, const char* detail) {
  throw py::type_error(std::string(what) + ": expected " + expected +
                       " (a numpy array or torch CPU tensor); got " +
                       std::string(py::str(py::type::of(obj))) + ": " + detail);
}

// Exports `obj` (or its __array__() view) as a C-contiguous buffer.
py::buffer_info Export(py::handle obj, bool writable, const char* what,
                       const char* expected) {
  py::object exporter = py::reinterpret_borrow<py::object>(obj);
  if (!PyObject_CheckBuffer(exporter.ptr())) {
    if (!py::hasattr(exporter, "__array__")) {
      ThrowWrongBuffer(obj, what, expected, "no buffer protocol");
    }
    exporter = exporter.attr("__array__")();
  }
  auto* view = new Py_buffer();
  const int flags =
      PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(exporter.ptr(), view, flags) != 0) {
    delete view;
    py::error_already_set error;  // e.g. "ndarray is not C-contiguous"
    ThrowWrongBuffer(obj, what, expected, error.what());
  }
  return py::buffer_info(view, /*ownview=*/true);
}

}  // namespace

HeldBuffer HeldBuffer::Floats(py::handle obj, bool writable,
                              const char* what) {
  const char* expected = writable ? "a writable C-contiguous float32 buffer"
                                  : "a C-contiguous float32 buffer";
  py::buffer_info info = Export(obj, writable, what, expected);
  if (info.itemsize != 4 || FormatChar(info.format) != 'f') {
    ThrowWrongBuffer(obj, what, expected,
                     ("element format '" + info.format + "'").c_str());
  }
  return HeldBuffer(std::move(info));
}

HeldBuffer HeldBuffer::Keys(py::handle obj, const char* what) {
  const char* expected = "a C-contiguous uint64 or int64 buffer";
  py::buffer_info info = Export(obj, /*writable=*/false, what, expected);
  const char c = FormatChar(info.format);
  if (info.itemsize != 8 || (c != 'Q' && c != 'L' && c != 'q' && c != 'l')) {
    ThrowWrongBuffer(obj, what, expected,
                     ("element format '" + info.format + "'").c_str());
  }
  return HeldBuffer(std::move(info));
}

}  // namespace ps::python
