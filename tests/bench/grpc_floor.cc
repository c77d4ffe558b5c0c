#include "tests/bench/grpc_floor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>

#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"

namespace ps::bench {
namespace {

constexpr char kMethod[] = "/ps.bench.Floor/Echo";
constexpr uint64_t kMaxBytes = 64ull << 20;

// Bytes that every message references instead of copying (like the
// client's zero-copy push); allocated once.
const char* Payload() {
  static const std::string* payload = new std::string(kMaxBytes, 'x');
  return payload->data();
}

grpc::ByteBuffer StaticBuffer(const char* data, size_t n) {
  grpc::Slice slice(data, n, grpc::Slice::STATIC_SLICE);
  return grpc::ByteBuffer(&slice, 1);
}

// Blocks until the event of `tag` arrives on `cq` (other events are
// dropped). False: the operation failed or the queue shut down.
bool Await(grpc::CompletionQueue* cq, void* tag) {
  void* got;
  bool ok;
  while (cq->Next(&got, &ok)) {
    if (got == tag) return ok;
  }
  return false;
}

}  // namespace

int RunGrpcEcho(const std::string& listen_ip, const std::string& port_file) {
  grpc::AsyncGenericService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen_ip + ":0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterAsyncGenericService(&service);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  std::unique_ptr<grpc::ServerCompletionQueue> cq =
      builder.AddCompletionQueue();
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return 1;
  {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << port << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  grpc::GenericServerContext context;
  grpc::GenericServerAsyncReaderWriter stream(&context);
  int tags[4];  // accept, read, write, finish
  service.RequestCall(&context, &stream, cq.get(), cq.get(), &tags[0]);
  if (Await(cq.get(), &tags[0])) {
    grpc::ByteBuffer request;
    while (true) {
      stream.Read(&request, &tags[1]);
      if (!Await(cq.get(), &tags[1])) break;
      std::vector<grpc::Slice> slices;
      uint64_t header[2] = {0, 0};
      if (!request.Dump(&slices).ok()) break;
      size_t have = 0;
      for (const grpc::Slice& s : slices) {
        const size_t take = std::min(sizeof(header) - have, s.size());
        std::memcpy(reinterpret_cast<char*>(header) + have, s.begin(), take);
        have += take;
        if (have == sizeof(header)) break;
      }
      const uint64_t down = std::min(header[1], kMaxBytes);
      stream.Write(StaticBuffer(Payload(), down), &tags[2]);
      if (!Await(cq.get(), &tags[2])) break;
    }
    stream.Finish(grpc::Status::OK, &tags[3]);
    Await(cq.get(), &tags[3]);
  }
  server->Shutdown();
  cq->Shutdown();
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
  }
  return 0;
}

std::vector<FloorResult> MeasureGrpcFloor(
    const std::string& address,
    const std::vector<std::pair<uint64_t, uint64_t>>& exchanges,
    const std::function<int(const std::pair<uint64_t, uint64_t>&)>& reps) {
  std::vector<FloorResult> results(exchanges.size());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, kMethod, &cq);
  int tags[4];  // start, write, read, finish
  call->StartCall(&tags[0]);
  bool ok = Await(&cq, &tags[0]);
  for (size_t i = 0; ok && i < exchanges.size(); ++i) {
    const auto& [up, down] = exchanges[i];
    const uint64_t header[2] = {up, down};
    std::vector<double> times;
    const int n = reps(exchanges[i]);
    for (int r = 0; ok && r < n + 2; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      grpc::Slice slices[2] = {grpc::Slice(header, sizeof(header)),
                               grpc::Slice(Payload(), std::min(up, kMaxBytes),
                                           grpc::Slice::STATIC_SLICE)};
      grpc::ByteBuffer request(slices, 2);
      grpc::ByteBuffer response;
      call->Write(request, &tags[1]);
      call->Read(&response, &tags[2]);
      void* got;
      bool got_ok;
      for (int events = 0; events < 2 && ok; ++events) {
        ok = cq.Next(&got, &got_ok) && got_ok;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (ok && r >= 2) {
        times.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
    }
    if (!ok || times.empty()) break;
    std::sort(times.begin(), times.end());
    results[i].mean_s =
        std::accumulate(times.begin(), times.end(), 0.0) / times.size();
    results[i].p50_s = times[times.size() / 2];
    results[i].p99_s = times[std::min(
        times.size() - 1, static_cast<size_t>(0.99 * times.size()))];
  }
  call->WritesDone(&tags[1]);
  grpc::Status status;
  call->Finish(&status, &tags[3]);
  context.TryCancel();
  cq.Shutdown();
  void* tag;
  bool event_ok;
  while (cq.Next(&tag, &event_ok)) {
  }
  return results;
}

}  // namespace ps::bench
