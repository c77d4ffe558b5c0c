#include "server/export_call.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/completion_tag.h"

namespace ps {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

class ExportCall final : public CompletionTag {
 public:
  static void Spawn(ServerQueue* queue,
                    std::shared_ptr<const ExportMethod> method) {
    queue->BeginCall([&](grpc::ServerCompletionQueue* cq) {
      auto* call = new ExportCall(queue, method);
      method->request(&call->context_, &call->request_, &call->writer_, cq,
                      call);
    });
  }

  void OnComplete(bool ok) override {
    switch (state_) {
      case State::kWaiting:
        if (!ok) return End();  // no call came (shutdown)
        Spawn(queue_, method_);
        return Start();
      case State::kWriting:
        if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                            "export stream broken"));
        if (last_sent_) return Finish(grpc::Status::OK);
        return WriteNext();
      case State::kFinishing:
        return End();
    }
  }

 private:
  enum class State { kWaiting, kWriting, kFinishing };

  ExportCall(ServerQueue* queue, std::shared_ptr<const ExportMethod> method)
      : queue_(queue), method_(std::move(method)), writer_(&context_) {}

  void Start() {
    if (absl::Status auth = method_->authorize(context_); !auth.ok()) {
      return Finish(ToGrpc(auth));
    }
    uint64_t rows = request_.max_rows_per_chunk();
    const ShardTable* table = method_->shard->FindTableById(request_.table_id());
    if (table == nullptr) {
      return Finish(ToGrpc(absl::NotFoundError(
          absl::StrCat("no table with id ", request_.table_id()))));
    }
    const uint64_t row_bytes =
        std::max<uint64_t>(1, table->config().dim) * sizeof(float);
    if (rows == 0) rows = std::max<uint64_t>(1, kExportChunkBytes / row_bytes);
    if (rows * row_bytes > kExportMaxChunkBytes) {
      return Finish(ToGrpc(absl::InvalidArgumentError(absl::StrCat(
          "max_rows_per_chunk ", rows, " makes chunks of more than ",
          kExportMaxChunkBytes, " bytes of values"))));
    }
    table_ = table;
    rows_per_chunk_ = rows;
    WriteNext();
  }

  void WriteNext() {
    absl::StatusOr<ExportedRows> rows =
        table_->ExportRows(cursor_, rows_per_chunk_, request_.with_state());
    if (!rows.ok()) return Finish(ToGrpc(rows.status()));
    cursor_ = rows->next_cursor;
    total_ += rows->ids.size();
    proto::ExportChunk chunk;
    chunk.set_dim(table_->config().dim);
    chunk.set_num_state_slots(static_cast<uint32_t>(rows->state.size()));
    chunk.set_num_rows(rows->ids.size());
    chunk.set_ids(Bytes(rows->ids));
    chunk.set_values(Bytes(rows->values));
    std::string* state = chunk.mutable_state();
    for (const std::vector<float>& slot : rows->state) state->append(Bytes(slot));
    if (rows->done) {
      chunk.set_last(true);
      chunk.set_total_rows(total_);
      last_sent_ = true;
    }
    state_ = State::kWriting;
    writer_.Write(chunk, this);
  }

  void Finish(const grpc::Status& status) {
    state_ = State::kFinishing;
    writer_.Finish(status, this);
  }

  void End() {
    queue_->EndCall();
    delete this;
  }

  ServerQueue* const queue_;
  const std::shared_ptr<const ExportMethod> method_;
  grpc::ServerContext context_;
  proto::ExportRequest request_;
  grpc::ServerAsyncWriter<proto::ExportChunk> writer_;
  State state_ = State::kWaiting;
  const ShardTable* table_ = nullptr;  // tables live as long as the shard
  uint64_t rows_per_chunk_ = 0;
  uint64_t cursor_ = 0;
  uint64_t total_ = 0;
  bool last_sent_ = false;
};

}  // namespace

void ServeExportTable(ServerQueue* queue, ExportMethod method) {
  ExportCall::Spawn(queue,
                    std::make_shared<const ExportMethod>(std::move(method)));
}

}  // namespace ps
