// RETURN_IF_ERROR / ASSIGN_OR_RETURN: Abseil 20220623 has no status macros.
#ifndef PS_COMMON_STATUS_MACROS_H_
#define PS_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PS_CONCAT_INNER_(a, b) a##b
#define PS_CONCAT_(a, b) PS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the caller when not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status ps_status_ = (expr);        \
    if (!ps_status_.ok()) return ps_status_;   \
  } while (0)

// `lhs` = value of `rexpr` (an absl::StatusOr<T>), or returns its status.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  PS_ASSIGN_OR_RETURN_IMPL_(PS_CONCAT_(ps_statusor_, __LINE__), lhs, rexpr)

#define PS_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

#endif  // PS_COMMON_STATUS_MACROS_H_
