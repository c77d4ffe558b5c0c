// CPU cost of the server's receive path for one pushed chunk, in-process
// (no network), so a change of one pass over the bytes is visible on a
// shared, noisy machine: the chunk arrives as gRPC delivers it (a ByteBuffer
// of ~8 KiB slices; transport_bench measured up to 515 slices per 4 MiB
// message), then decode, validate (finiteness included) and the SGD apply
// of a dense async table, next to memcpy of the same bytes (the ceiling).
// Thread CPU time, best of --reps. --chunk_kib defaults to the client's
// default client.chunk_bytes (512 KiB). Run:
//   bazel run //server:receive_path_bench -- [--chunk_kib=512] [--slice_kib=8]
#include <malloc.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "common/backend/cpu_update_backend.h"
#include "common/command_line.h"
#include "common/config.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/data_request_view.h"
#include "proto/data_wire.h"
#include "proto/ps.pb.h"
#include "server/shard_table.h"

ABSL_FLAG(int, chunk_kib, 512, "chunk size in KiB (positive)");
ABSL_FLAG(int, slice_kib, 8, "slice size of the received message (KiB)");
ABSL_FLAG(int, reps, 15, "repetitions (best is reported)");

namespace ps {
namespace {

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double Best(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = ThreadCpuMs();
    f();
    best = std::min(best, ThreadCpuMs() - t0);
  }
  return best;
}

#define CHECK_OK(expr)                                             \
  do {                                                             \
    absl::Status _s = (expr);                                      \
    if (!_s.ok()) {                                                \
      std::fprintf(stderr, "%s: %s\n", #expr, _s.ToString().c_str()); \
      std::abort();                                                \
    }                                                              \
  } while (0)

int Main() {
  if (absl::GetFlag(FLAGS_chunk_kib) <= 0 || absl::GetFlag(FLAGS_slice_kib) <= 0 ||
      absl::GetFlag(FLAGS_reps) <= 0) {
    std::fprintf(stderr, "--chunk_kib, --slice_kib and --reps must be positive\n");
    return 2;
  }
  const uint64_t n = static_cast<uint64_t>(absl::GetFlag(FLAGS_chunk_kib)) << 8;
  const size_t slice = static_cast<size_t>(absl::GetFlag(FLAGS_slice_kib)) << 10;
  const int reps = absl::GetFlag(FLAGS_reps);

  TableConfig config;
  config.name = "bench";
  config.size = n;
  config.optimizer.learning_rate = 1e-6f;
  ShardTableOptions options;
  CpuUpdateBackend backend;
  auto table = ShardTable::Create(config, options, &backend);
  CHECK_OK(table.status());

  proto::DataRequest request;
  request.set_request_id(1);
  request.set_op(proto::PUSH);
  request.set_worker_id(-1);
  request.set_length(n);
  request.set_first_chunk(true);
  std::vector<float> grad(n);
  for (uint64_t i = 0; i < n; ++i) grad[i] = static_cast<float>(i % 97) * 1e-3f;
  request.set_values(std::string(reinterpret_cast<const char*>(grad.data()), 4 * n));
  const std::string wire = request.SerializeAsString();
  // The message as gRPC hands it over: fixed-size slices (their own memory).
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < wire.size(); at += slice) {
    slices.emplace_back(wire.data() + at, std::min(slice, wire.size() - at));
  }
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  std::vector<char> dst(wire.size());
  const absl::string_view values = request.values();

  const double memcpy_ms = Best(reps, [&] { std::memcpy(dst.data(), wire.data(), wire.size()); });
  const double parse_ms = Best(reps, [&] {
    proto::DataRequest parsed;
    grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&buffer));
    if (!parsed.ParseFromZeroCopyStream(&reader)) std::abort();
  });
  const double scalar_check_ms = Best(reps, [&] {
    // Round 2's check: a branch per element on std::isfinite.
    const float* f = reinterpret_cast<const float*>(values.data());
    for (uint64_t i = 0; i < n; ++i) {
      if (!std::isfinite(f[i])) std::abort();
    }
  });
  const double vector_check_ms = Best(reps, [&] {
    if (!AllFiniteFloats(values)) std::abort();
  });
  const double decode_ms = Best(reps, [&] {
    auto received = DecodeDataRequest(buffer);
    if (!received.ok()) std::abort();
  });
  const DataRequestView view = ViewOf(request);
  const double apply_ms = Best(reps, [&] {
    proto::DataResponse response;
    const DataRequestView& v = view;
    CHECK_OK((*table)->Execute(v, &response));
  });
  // Round 2's path: protobuf parse, scalar check, apply.
  const double round2_ms = Best(reps, [&] {
    proto::DataRequest parsed;
    grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&buffer));
    if (!parsed.ParseFromZeroCopyStream(&reader)) std::abort();
    DataRequestView v = ViewOf(parsed);
    const float* f = reinterpret_cast<const float*>(v.values.flat().data());
    for (uint64_t i = 0; i < n; ++i) {
      if (!std::isfinite(f[i])) std::abort();
    }
    CHECK_OK((*table)->Validate(v));
    proto::DataResponse response;
    CHECK_OK((*table)->Execute(v, &response));
  });
  // Round 3's path: the values copied out of the slices into aligned
  // memory with the finiteness scan fused, then validate and apply.
  const double round3_ms = Best(reps, [&] {
    auto received = DecodeDataRequest(buffer);
    if (!received.ok()) std::abort();
    DataRequestView v = (*received)->view();
    std::vector<absl::string_view> pieces;
    for (const grpc::Slice& s : slices) {
      pieces.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    std::unique_ptr<float[]> copy(new float[n]);
    CopyWireRange(pieces, WireRange{true, wire.size() - 4 * n, 4 * n},
                  reinterpret_cast<char*>(copy.get()));
    v.values = absl::string_view(reinterpret_cast<const char*>(copy.get()), 4 * n);
    CHECK_OK((*table)->Validate(v));
    proto::DataResponse response;
    CHECK_OK((*table)->Execute(v, &response));
  });
  // This round's path, as the service runs it: the values stay in the
  // slices; the scan and the apply read them there.
  const double round4_ms = Best(reps, [&] {
    auto received = DecodeDataRequest(buffer);
    if (!received.ok()) std::abort();
    CHECK_OK((*table)->Validate((*received)->view()));
    proto::DataResponse response;
    CHECK_OK((*table)->Execute((*received)->view(), &response));
  });
  const double mib = static_cast<double>(wire.size()) / (1 << 20);
  std::printf("chunk %.3f MiB in %zu slices of %zu KiB; thread CPU ms, best of %d\n", mib,
              slices.size(), slice >> 10, reps);
  std::printf("%-44s %8.3f\n", "memcpy (ceiling of one pass)", memcpy_ms);
  std::printf("%-44s %8.3f\n", "protobuf parse from slices (round 2)", parse_ms);
  std::printf("%-44s %8.3f\n", "finite check, isfinite branch (round 2)", scalar_check_ms);
  std::printf("%-44s %8.3f\n", "finite check, exponent mask (round 3)", vector_check_ms);
  std::printf("%-44s %8.3f\n", "DecodeDataRequest (values scanned in slices)", decode_ms);
  std::printf("%-44s %8.3f\n", "SGD apply (Execute)", apply_ms);
  std::printf("%-44s %8.3f\n", "round 2 path: parse+check+validate+apply", round2_ms);
  std::printf("%-44s %8.3f\n", "copy-out path: decode+copy+check+apply", round3_ms);
  std::printf("%-44s %8.3f\n", "round 4 path: decode+check+apply in slices", round4_ms);
  std::printf(
      "JSON {\"mib\":%.2f,\"slices\":%zu,\"memcpy_ms\":%.3f,\"parse_ms\":%.3f,"
      "\"scalar_check_ms\":%.3f,\"vector_check_ms\":%.3f,\"decode_ms\":%.3f,"
      "\"apply_ms\":%.3f,\"round2_ms\":%.3f,\"round3_ms\":%.3f,"
      "\"round4_ms\":%.3f}\n",
      mib, slices.size(), memcpy_ms, parse_ms, scalar_check_ms, vector_check_ms, decode_ms,
      apply_ms, round2_ms, round3_ms, round4_ms);
  return 0;
}

}  // namespace
}  // namespace ps

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "CPU cost of the server's receive path (decode, validate, apply) of one "
      "pushed chunk, in-process, against memcpy.\n\n"
      "  receive_path_bench [--chunk_kib=512] [--slice_kib=8] [--reps=15]",
      {__FILE__});
  // As ps_server (TuneAllocatorForLargeMessages, common/process_tuning.h): chunk
  // buffers come from the heap, not from fresh mmap()ed pages.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  return ps::Main();
}
