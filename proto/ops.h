// What each data-path Op does (ps.proto's Op): whether it pushes gradients,
// pulls values, or both.
#ifndef PS_PROTO_OPS_H_
#define PS_PROTO_OPS_H_

#include "proto/ps.pb.h"

namespace ps {

inline bool IsPush(proto::Op op) {
  return op == proto::PUSH || op == proto::PUSH_PULL;
}
inline bool IsPull(proto::Op op) {
  return op == proto::PULL || op == proto::PUSH_PULL;
}

}  // namespace ps

#endif  // PS_PROTO_OPS_H_
