// absl::Status -> the ps_client exception of its status family.
//
// The classes live in Python (ps_client/errors.py, one per absl::StatusCode,
// all derived from ps_client.errors.PsError); this unit only hands over the
// code and the message. REQUIRES: the GIL.
#ifndef PS_CLIENT_PYTHON_BINDINGS_STATUS_H_
#define PS_CLIENT_PYTHON_BINDINGS_STATUS_H_

#include <pybind11/pybind11.h>

#include "absl/status/status.h"

namespace ps::python {

// The exception object for a non-OK `status` (not raised).
pybind11::object StatusToException(const absl::Status& status);

// Raises StatusToException(status). REQUIRES: !status.ok().
[[noreturn]] void ThrowStatus(const absl::Status& status);

// Raises for a non-OK status; returns otherwise.
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}

}  // namespace ps::python

#endif  // PS_CLIENT_PYTHON_BINDINGS_STATUS_H_
