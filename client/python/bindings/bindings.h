// The pieces of the ps_client._core extension module, one per file:
// config_bindings.cc (configs, table descriptions, stats), py_future.cc
// (Future) and client_bindings.cc (Client). module.cc calls them in order.
//
// Bindings are thin: argument conversion and GIL handling only; anything
// more belongs in the Python package (ps_client/*.py) or the C++ SDK. The
// data calls' conversions (a table argument, a buffer) are done here rather
// than in Python because every Python-level step adds latency to a small
// call (client/python/bench/RESULTS.md).
#ifndef PS_CLIENT_PYTHON_BINDINGS_BINDINGS_H_
#define PS_CLIENT_PYTHON_BINDINGS_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace ps::python {

void BindConfig(pybind11::module_& m);
void BindFuture(pybind11::module_& m);
void BindClient(pybind11::module_& m);

}  // namespace ps::python

#endif  // PS_CLIENT_PYTHON_BINDINGS_BINDINGS_H_
