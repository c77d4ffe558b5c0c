#include "client/python/bindings/buffer.h"

#include <string>
#include <string_view>

namespace py = pybind11;

namespace ps::python {
namespace {

// The struct-module format character of `format`, without a byte-order or
// alignment prefix ('@', '=', '<'; our platform is little-endian).
char FormatChar(std::string_view format) {
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

// Exports `obj` (or its __array__() view) as a C-contiguous buffer; checks
// its element size and format character with `accepts`.
template <typename Accepts>
std::unique_ptr<Py_buffer, HeldBuffer::Release> Export(py::handle obj,
                                                       bool writable,
                                                       const char* what,
                                                       const char* expected,
                                                       Accepts accepts) {
  py::object exporter = py::reinterpret_borrow<py::object>(obj);
  if (!PyObject_CheckBuffer(exporter.ptr())) {
    if (!py::hasattr(exporter, "__array__")) {
      ThrowWrongBuffer(obj, what, expected, "no buffer protocol");
    }
    exporter = exporter.attr("__array__")();
  }
  auto view = std::make_unique<Py_buffer>();
  const int flags =
      PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(exporter.ptr(), view.get(), flags) != 0) {
    py::error_already_set error;  // e.g. "ndarray is not C-contiguous"
    ThrowWrongBuffer(obj, what, expected, error.what());
  }
  std::unique_ptr<Py_buffer, HeldBuffer::Release> held(view.release());
  // A null format means unsigned bytes (PEP 3118).
  const std::string_view format = held->format != nullptr ? held->format : "B";
  if (!accepts(held->itemsize, FormatChar(format))) {
    ThrowWrongBuffer(obj, what, expected,
                     ("element format '" + std::string(format) + "'").c_str());
  }
  return held;
}

}  // namespace

void HeldBuffer::Release::operator()(Py_buffer* view) const {
  PyBuffer_Release(view);
  delete view;
}

HeldBuffer HeldBuffer::Floats(py::handle obj, bool writable, const char* what) {
  return HeldBuffer(
      Export(obj, writable, what,
             writable ? "a writable C-contiguous float32 buffer"
                      : "a C-contiguous float32 buffer",
             [](Py_ssize_t size, char c) { return size == 4 && c == 'f'; }));
}

HeldBuffer HeldBuffer::Keys(py::handle obj, const char* what) {
  return HeldBuffer(Export(
      obj, /*writable=*/false, what, "a C-contiguous uint64 or int64 buffer",
      [](Py_ssize_t size, char c) {
        return size == 8 && (c == 'Q' || c == 'L' || c == 'q' || c == 'l');
      }));
}

}  // namespace ps::python
