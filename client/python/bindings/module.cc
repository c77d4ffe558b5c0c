// PYBIND11_MODULE of ps_client._core (see bindings.h).
#include <pybind11/pybind11.h>

#include "client/python/bindings/bindings.h"
#include "common/process_tuning.h"

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "Bindings of the C++ client SDK (client/client.h). Use the ps_client "
      "package, which wraps them; this module is its implementation.";
  ps::python::BindConfig(m);
  ps::python::BindFuture(m);
  ps::python::BindClient(m);
  m.def("tune_allocator_for_large_messages",
        &ps::TuneAllocatorForLargeMessages,
        "glibc malloc keeps message-sized buffers instead of mmapping each "
        "(common/process_tuning.h); call once, early. Returns False if glibc "
        "refused a setting.");
  m.def("disable_mutex_deadlock_detection",
        &ps::DisableMutexDeadlockDetection,
        "Turns off Abseil's debug lock graph (common/process_tuning.h). "
        "Importing ps_client calls it.");
}
