// ClientImpl's data path (client_impl.h): dense and sparse pulls and pushes,
// planned into chunked wire requests and sent on the shards' streams. The
// session (connect, handshake, registration, clocks, control RPCs) is
// client_impl.cc.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client_impl.h"
#include "client/future.h"
#include "client/request_planner.h"
#include "client/shard_joiner.h"
#include "common/bytes.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "proto/ops.h"

namespace ps {
namespace {

// The caller's arguments of a dense operation on `table`: the table's kind,
// matching push-pull spans, the range inside the table.
absl::Status CheckDenseArguments(proto::Op op, const TableInfo& table,
                                 uint64_t offset, size_t num_grads,
                                 size_t num_out) {
  if (table.kind != TableKind::kDense) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.name, "' (id ", table.table_id,
                     ") is sparse; use the sparse calls"));
  }
  if (op == proto::PUSH_PULL && num_grads != num_out) {
    return absl::InvalidArgumentError(
        absl::StrCat("PushPullDense: ", num_grads,
                     " gradients but an output of ", num_out, " values"));
  }
  const uint64_t length = op == proto::PULL ? num_out : num_grads;
  if (offset > table.size || length > table.size - offset) {
    return absl::OutOfRangeError(absl::StrCat(
        "range [", offset, ", ", offset + length, ") is outside table '",
        table.name, "' of ", table.size, " elements"));
  }
  return absl::OkStatus();
}

// The caller's arguments of a sparse operation on `table`: the table's kind
// and spans of keys x dim values.
absl::Status CheckSparseArguments(proto::Op op, const TableInfo& table,
                                  size_t num_keys, size_t num_grads,
                                  size_t num_out) {
  if (table.kind != TableKind::kSparse) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.name, "' (id ", table.table_id,
                     ") is dense; use the dense calls"));
  }
  const uint32_t dim = table.dim;
  const uint64_t expected = num_keys * dim;
  if (IsPush(op) && num_grads != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse push to '", table.name, "': ", num_keys, " keys of dim ", dim,
        " need ", expected, " gradient values; got ", num_grads));
  }
  if (IsPull(op) && num_out != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse pull from '", table.name, "': ", num_keys, " keys of dim ",
        dim, " need an output of ", expected, " values; got ", num_out));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ClientImpl::CheckMayPush(const TableInfo& table) const {
  if (options_.worker_id < 0 && table.consistency_traits().workers_only_push) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a client that is not a worker may only push to async tables; table '",
        table.name, "' is ", ConsistencyName(table.consistency)));
  }
  return absl::OkStatus();
}

Promise ClientImpl::NewOperation(proto::Op op) {
  Promise promise;
  // Wait() on its future polls the streams itself.
  promise.state->poller = poller_;
  if (IsPush(op)) {
    {
      absl::MutexLock lock(&push_mu_);
      ++pushes_in_flight_;
    }
    // Runs once the push completed (Ready() is already true then), so a
    // Clock() that sees no push in flight also sees every push future done.
    // The destructor closes the streams before push_mu_ dies.
    promise.future().Then([this](const absl::Status&) {
      absl::MutexLock lock(&push_mu_);
      --pushes_in_flight_;
    });
  }
  return promise;
}

Future ClientImpl::DenseOp(proto::Op op, uint32_t table_id, uint64_t offset,
                           absl::Span<const float> grads,
                           absl::Span<float> out, bool zero_copy) {
  absl::StatusOr<TableInfo> table = LookupTable(table_id);
  if (!table.ok()) return Future(table.status());
  const uint64_t length = op == proto::PULL ? out.size() : grads.size();
  if (absl::Status s = CheckDenseArguments(op, *table, offset, grads.size(),
                                           out.size());
      !s.ok()) {
    return Future(s);
  }
  if (IsPush(op)) {
    absl::Status may_push = CheckMayPush(*table);
    if (!may_push.ok()) return Future(may_push);
  }
  if (length == 0) return Future();

  // Values travel as the table's value type: float32 straight from and into
  // the caller's spans; other types are encoded / decoded here (the
  // client's value-type edge), so the caller's span is never sent
  // zero-copy (the encoded copy is).
  const ValueTypeInfo& wire = InfoOf(table->value_type);
  const bool float32 = table->value_type == ValueType::kFloat32;
  if (!float32) zero_copy = false;
  const std::vector<DenseChunk> chunks =
      PlanDense(offset, length, table->size, num_servers(),
                options_.client.chunk_bytes, wire.bytes);
  Promise promise = NewOperation(op);
  const ShardJoiner::Completion joiner(static_cast<int64_t>(chunks.size()),
                                       promise.state,
                                       {op, table->name, addresses_});
  const int64_t clock = this->clock();
  for (const DenseChunk& chunk : chunks) {
    const uint64_t at = chunk.offset - offset;  // position in the caller's span
    proto::DataRequest request;
    request.set_op(op);
    request.set_table_id(table_id);
    request.set_worker_id(options_.worker_id);
    request.set_clock(clock);
    request.set_offset(chunk.offset);
    request.set_length(chunk.length);
    request.set_client_id(client_id_);
    request.set_first_chunk(chunk.first_chunk);
    request.set_value_type(static_cast<proto::ValueType>(table->value_type));
    absl::string_view payload =
        IsPush(op) && float32
            ? absl::string_view(
                  reinterpret_cast<const char*>(grads.data() + at),
                  chunk.length * sizeof(float))
            : absl::string_view();
    // Other types are encoded into a buffer of the request's own (not
    // zero-filled first, as resizing the protobuf string would) and sent
    // from it without a further copy.
    std::shared_ptr<char[]> encoded;
    if (IsPush(op) && !float32) {
      encoded = UninitializedArray<char>(chunk.length * wire.bytes);
      wire.encode(grads.subspan(at, chunk.length), encoded.get());
      payload = absl::string_view(encoded.get(), chunk.length * wire.bytes);
    } else if (!zero_copy) {
      request.mutable_values()->assign(payload.data(), payload.size());
    }
    // A pull's values are copied by the connection from the received buffer
    // (a size mismatch is INTERNAL): float32 straight into the caller's
    // span, other types into a buffer of the request's own (not zero-filled
    // first), decoded from there into the caller's span.
    absl::Span<char> dst;
    std::shared_ptr<char[]> received;
    absl::Span<float> decode_into;
    if (IsPull(op) && float32) {
      dst = absl::Span<char>(reinterpret_cast<char*>(out.data() + at),
                             chunk.length * sizeof(float));
    } else if (IsPull(op)) {
      received = UninitializedArray<char>(chunk.length * wire.bytes);
      dst = absl::Span<char>(received.get(), chunk.length * wire.bytes);
      decode_into = out.subspan(at, chunk.length);
    }
    auto done = [joiner, shard = chunk.shard, received, decode_into, &wire](
                    const absl::Status& status, proto::DataResponse* response) {
      if (status.ok() && !decode_into.empty()) {
        wire.decode(absl::string_view(received.get(),
                                      decode_into.size() * wire.bytes),
                    decode_into.data());
      }
      joiner.Done(shard, status, response);
    };
    if (zero_copy || encoded != nullptr) {
      connections_[chunk.shard]->SendWithPayload(std::move(request), payload,
                                                 std::move(encoded), dst,
                                                 std::move(done));
    } else {
      connections_[chunk.shard]->Send(std::move(request), dst, std::move(done));
    }
  }
  return promise.future();
}

Future ClientImpl::SparseOp(proto::Op op, uint32_t table_id,
                            absl::Span<const uint64_t> keys,
                            absl::Span<const float> grads,
                            absl::Span<float> out) {
  absl::StatusOr<TableInfo> table = LookupTable(table_id);
  if (!table.ok()) return Future(table.status());
  if (absl::Status s = CheckSparseArguments(op, *table, keys.size(),
                                            grads.size(), out.size());
      !s.ok()) {
    return Future(s);
  }
  const uint32_t dim = table->dim;
  if (IsPush(op)) {
    absl::Status may_push = CheckMayPush(*table);
    if (!may_push.ok()) return Future(may_push);
  }
  if (keys.empty()) return Future();

  const uint32_t num_shards = static_cast<uint32_t>(num_servers());
  const ValueTypeInfo& wire = InfoOf(table->value_type);
  const bool float32 = table->value_type == ValueType::kFloat32;
  auto plan = std::make_shared<const SparsePlan>(PlanSparse(
      keys, dim, num_shards, options_.client.chunk_bytes,
      [num_shards](uint64_t key) { return SparseShardOf(key, num_shards); },
      wire.bytes));
  Promise promise = NewOperation(op);
  const ShardJoiner::Completion joiner(
      static_cast<int64_t>(plan->requests.size()), promise.state,
      {op, table->name, addresses_});
  const int64_t clock = this->clock();
  for (size_t r = 0; r < plan->requests.size(); ++r) {
    const SparsePlan::Request& part = plan->requests[r];
    proto::DataRequest request;
    request.set_op(op);
    request.set_table_id(table_id);
    request.set_worker_id(options_.worker_id);
    request.set_clock(clock);
    request.set_client_id(client_id_);
    request.set_first_chunk(part.first_chunk);
    request.set_value_type(static_cast<proto::ValueType>(table->value_type));
    request.set_keys(EncodeRaw<uint64_t>(plan->RequestKeys(part)));
    const size_t values = part.num_keys * dim;
    // Pushed rows are summed (duplicate keys) in float32 and, for another
    // type, encoded, into buffers of the request's own (not zero-filled
    // first) that are sent without a further copy. Pulled rows are copied by
    // the connection into such a buffer (a size mismatch is INTERNAL) and
    // scattered (decoded first for another type) to the caller's positions.
    std::shared_ptr<char[]> payload;
    if (IsPush(op)) {
      if (float32) {
        payload = UninitializedArray<char>(values * sizeof(float));
        SumRows(*plan, part, grads, dim, reinterpret_cast<float*>(payload.get()));
      } else {
        std::unique_ptr<float[]> summed = UninitializedArray<float>(values);
        SumRows(*plan, part, grads, dim, summed.get());
        payload = UninitializedArray<char>(values * wire.bytes);
        wire.encode(absl::MakeConstSpan(summed.get(), values), payload.get());
      }
    }
    std::shared_ptr<char[]> received;
    if (IsPull(op)) received = UninitializedArray<char>(values * wire.bytes);
    const absl::Span<char> dst =
        IsPull(op) ? absl::Span<char>(received.get(), values * wire.bytes)
                   : absl::Span<char>();
    auto done = [joiner, plan, r, op, dim, out, received, values, float32,
                 &wire](const absl::Status& status,
                        proto::DataResponse* response) {
      if (status.ok() && IsPull(op)) {
        const SparsePlan::Request& part = plan->requests[r];
        if (float32) {
          ScatterRows(*plan, part,
                      absl::MakeConstSpan(
                          reinterpret_cast<const float*>(received.get()), values),
                      dim, out);
        } else {
          std::unique_ptr<float[]> rows = UninitializedArray<float>(values);
          wire.decode(absl::string_view(received.get(), values * wire.bytes),
                      rows.get());
          ScatterRows(*plan, part, absl::MakeConstSpan(rows.get(), values), dim,
                      out);
        }
      }
      joiner.Done(static_cast<int>(plan->requests[r].shard), status, response);
    };
    if (payload != nullptr) {
      const absl::string_view bytes(
          payload.get(), values * wire.bytes);
      connections_[part.shard]->SendWithPayload(
          std::move(request), bytes, std::move(payload), dst, std::move(done));
    } else {
      connections_[part.shard]->Send(std::move(request), dst, std::move(done));
    }
  }
  return promise.future();
}

Future ClientImpl::PullDense(uint32_t table_id, uint64_t offset,
                             absl::Span<float> out) {
  return DenseOp(proto::PULL, table_id, offset, {}, out, /*zero_copy=*/false);
}

Future ClientImpl::PushDense(uint32_t table_id, uint64_t offset,
                             absl::Span<const float> grads) {
  return DenseOp(proto::PUSH, table_id, offset, grads, {}, /*zero_copy=*/false);
}

Future ClientImpl::PushPullDense(uint32_t table_id, uint64_t offset,
                                 absl::Span<const float> grads,
                                 absl::Span<float> out) {
  return DenseOp(proto::PUSH_PULL, table_id, offset, grads, out,
                 /*zero_copy=*/false);
}

Future ClientImpl::PushDenseZeroCopy(uint32_t table_id, uint64_t offset,
                                     absl::Span<const float> grads) {
  return DenseOp(proto::PUSH, table_id, offset, grads, {}, /*zero_copy=*/true);
}

Future ClientImpl::PushPullDenseZeroCopy(uint32_t table_id, uint64_t offset,
                                         absl::Span<const float> grads,
                                         absl::Span<float> out) {
  return DenseOp(proto::PUSH_PULL, table_id, offset, grads, out,
                 /*zero_copy=*/true);
}

Future ClientImpl::PullSparse(uint32_t table_id,
                              absl::Span<const uint64_t> keys,
                              absl::Span<float> out) {
  return SparseOp(proto::PULL, table_id, keys, {}, out);
}

Future ClientImpl::PushSparse(uint32_t table_id,
                              absl::Span<const uint64_t> keys,
                              absl::Span<const float> grads) {
  return SparseOp(proto::PUSH, table_id, keys, grads, {});
}

Future ClientImpl::PushPullSparse(uint32_t table_id,
                                  absl::Span<const uint64_t> keys,
                                  absl::Span<const float> grads,
                                  absl::Span<float> out) {
  return SparseOp(proto::PUSH_PULL, table_id, keys, grads, out);
}

// ------------------------------------------------------ clocks and barriers

}  // namespace ps
