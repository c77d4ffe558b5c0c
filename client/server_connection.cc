#include "client/server_connection.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/channel_credentials.h"
#include "common/completion_tag.h"
#include "common/status_macros.h"
#include "proto/data_wire.h"

namespace ps {
namespace {

// Stream endings after which reconnecting and resending makes sense: the
// server went away, restarted or shut down, or the connection broke. Any
// other code means the server rejected the stream itself (credentials, a
// protocol violation, a message too large) and a resend would fail the same
// way.
bool IsTransient(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNAVAILABLE:
      return true;
    default:
      return false;
  }
}

absl::Duration Backoff(const ClientConfig& config, int64_t attempt) {
  int64_t ms = std::max<int64_t>(config.reconnect_initial_backoff_ms, 0);
  const int64_t cap = std::max<int64_t>(config.reconnect_max_backoff_ms, ms);
  for (int64_t i = 1; i < attempt && ms < cap; ++i) ms *= 2;
  return absl::Milliseconds(std::min(ms, cap));
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::Status FromResponseStatus(int32_t code, const std::string& message) {
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(
        absl::StrCat("status code ", code, " from server: ", message));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

// One DataStream call on the async API. Its queue/writing/closing/... fields
// are guarded by the owning connection's mu_ (not annotated: the analysis
// cannot name another object's mutex here). Operations: one read always
// pending until one fails, at most one write, and Finish once the read
// failed and neither a write nor the start is in flight, so the finish tag
// is the call's last event. The connection owns the stream and deletes it
// only after that event was handled (done).
class ServerConnection::Stream {
 public:
  // A tag on the connection's completion queue.
  struct Tag final : CompletionTag {
    Tag(Stream* stream, StreamEvent event) : stream(stream), event(event) {}
    void OnComplete(bool ok) override {
      stream->connection->OnStreamEvent(stream, event, ok);
    }
    Stream* const stream;
    const StreamEvent event;
  };

  explicit Stream(ServerConnection* connection) : connection(connection) {}

  ServerConnection* const connection;
  grpc::ClientContext context;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call;
  grpc::ByteBuffer response;  // the read in flight
  // Used by OnResponse only (reads are serial): kept across responses so
  // their storage is reused.
  ReceivedDataResponse received;
  proto::DataResponse decoded;
  grpc::Status status;        // set by Finish
  Tag start_tag{this, StreamEvent::kStart};
  Tag read_tag{this, StreamEvent::kRead};
  Tag write_tag{this, StreamEvent::kWrite};
  Tag finish_tag{this, StreamEvent::kFinish};

  std::deque<std::shared_ptr<Pending>> queue;  // not yet written
  std::shared_ptr<Pending> writing;            // the write in flight
  bool starting = true;        // the start's tag has not come back
  bool closing = false;        // read or write failed: no new writes
  bool read_failed = false;    // no read in flight any more
  bool finishing = false;      // Finish was called
  bool done = false;           // Finish completed and was handled
};

absl::StatusOr<std::unique_ptr<ServerConnection>> ServerConnection::Create(
    Options options) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   ChannelCredentials(options.tls));

  grpc::ChannelArguments args;
  // A chunk plus the request's other fields; never below the server's
  // default limit so large sparse rows still fit.
  const int64_t max_message = std::min<int64_t>(
      INT_MAX, std::max<int64_t>(options.client.chunk_bytes + (1 << 20),
                                 int64_t{64} << 20));
  args.SetMaxSendMessageSize(static_cast<int>(max_message));
  args.SetMaxReceiveMessageSize(static_cast<int>(max_message));
  args.SetCompressionAlgorithm(GRPC_COMPRESS_NONE);
  // The channel's own connection backoff must not be slower than ours, or a
  // restarted server stays unreachable to new streams for up to two minutes.
  const int initial = static_cast<int>(std::clamp<int64_t>(
      options.client.reconnect_initial_backoff_ms, 1, INT_MAX));
  const int maximum = static_cast<int>(std::clamp<int64_t>(
      options.client.reconnect_max_backoff_ms, initial, INT_MAX));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, initial);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, maximum);
  if (options.client.keepalive_ms > 0) {
    // Pings while calls are open (the data stream), however long it has been
    // quiet; a missing answer drops the connection and the stream is
    // reopened with its requests resent (see the class comment).
    const int time = static_cast<int>(
        std::min<int64_t>(options.client.keepalive_ms, INT_MAX));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, time);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                static_cast<int>(std::min<int64_t>(
                    options.client.keepalive_timeout_ms, INT_MAX)));
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // no limit
    args.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, time);
  }
  if (options.tls.enabled && !options.tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(options.tls.server_name_override);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, credentials, args);
  return std::unique_ptr<ServerConnection>(new ServerConnection(
      std::move(options), std::move(channel), std::move(credentials), args));
}

ServerConnection::ServerConnection(
    Options options, std::shared_ptr<grpc::Channel> channel,
    std::shared_ptr<grpc::ChannelCredentials> credentials,
    grpc::ChannelArguments args)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(proto::ParameterServer::NewStub(channel_)),
      data_stub_(std::make_unique<grpc::GenericStub>(channel_)),
      request_ids_(options_.request_ids != nullptr
                       ? options_.request_ids
                       : std::make_shared<std::atomic<uint64_t>>(1)),
      poller_(options_.poller != nullptr
                  ? options_.poller
                  : std::make_shared<CompletionPoller>()),
      credentials_(std::move(credentials)),
      channel_args_(std::move(args)) {
  {
    absl::MutexLock lock(&mu_);
    data_address_ = options_.address;
  }
  reconnect_thread_ = std::thread([this] { ReconnectLoop(); });
}

ServerConnection::~ServerConnection() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    cv_.SignalAll();
  }
  reconnect_thread_.join();  // from here on only this thread replaces stream_
  Stream* active = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (stream_ != nullptr && !stream_->done) active = stream_.get();
  }
  if (active != nullptr) active->context.TryCancel();  // fails its operations
  std::map<uint64_t, std::shared_ptr<Pending>> to_fail;
  {
    absl::MutexLock lock(&mu_);
    while (stream_ != nullptr && !stream_->done) cv_.Wait(&mu_);
    to_fail.swap(pending_);
  }
  FailAll(std::move(to_fail),
          absl::CancelledError(absl::StrCat("connection to server ",
                                            options_.address, " closed")));
  stream_.reset();
}

void ServerConnection::Send(proto::DataRequest request,
                            absl::Span<char> values_into,
                            ResponseCallback done) {
  if (request.values().empty()) {  // a pull: nothing to own
    SendWithPayload(std::move(request), absl::string_view(), nullptr,
                    values_into, std::move(done));
    return;
  }
  auto values = std::make_shared<std::string>();
  values->swap(*request.mutable_values());
  const absl::string_view payload(*values);
  SendWithPayload(std::move(request), payload, std::move(values), values_into,
                  std::move(done));
}

void ServerConnection::SendWithPayload(proto::DataRequest request,
                                       absl::string_view payload,
                                       std::shared_ptr<const void> owner,
                                       absl::Span<char> values_into,
                                       ResponseCallback done) {
  auto entry = std::make_shared<Pending>();
  const uint64_t id = request_ids_->fetch_add(1, std::memory_order_relaxed);
  request.set_request_id(id);
  entry->wire = SerializeWithPayload(request, kDataRequestValuesField, payload,
                                     std::move(owner));
  entry->values_into = values_into;
  entry->done = std::move(done);
  std::shared_ptr<Pending> to_write;
  Stream* stream = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (!shutting_down_) {
      pending_.emplace(id, entry);
      switch (state_) {
        case State::kOpen:
          stream_->queue.push_back(entry);
          to_write = NextWriteLocked(stream_.get());
          stream = stream_.get();
          break;
        case State::kIdle:
          state_ = State::kConnecting;
          next_attempt_ = absl::Now();
          cv_.SignalAll();
          break;
        case State::kConnecting:
          break;  // sent when the next stream opens
      }
      entry = nullptr;
    }
  }
  if (entry != nullptr) {
    FailAll({{id, std::move(entry)}},
            absl::CancelledError(absl::StrCat(
                "connection to server ", options_.address, " closed")));
    return;
  }
  // `stream` stays alive: a write in flight keeps it from finishing.
  if (to_write != nullptr) StartWrite(stream, std::move(to_write));
}

std::unique_ptr<grpc::ClientContext> ServerConnection::NewContext(
    absl::Duration timeout, bool wait_for_ready) const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!options_.auth_token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.auth_token);
  }
  if (timeout != absl::InfiniteDuration()) {
    context->set_deadline(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(timeout));
  }
  context->set_wait_for_ready(wait_for_ready && !options_.resolve_address);
  return context;
}

size_t ServerConnection::NumPendingForTesting() {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

int64_t ServerConnection::StreamsOpenedForTesting() {
  absl::MutexLock lock(&mu_);
  return streams_opened_;
}

void ServerConnection::ReconnectLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (shutting_down_) return;
        if (state_ == State::kConnecting) {
          if (absl::Now() >= next_attempt_) break;
          cv_.WaitWithDeadline(&mu_, next_attempt_);
        } else {
          cv_.Wait(&mu_);
        }
      }
    }
    OpenStream();
  }
}

void ServerConnection::OpenStream() {
  auto stream = std::make_unique<Stream>(this);
  if (!options_.auth_token.empty()) {
    stream->context.AddMetadata("authorization",
                                "Bearer " + options_.auth_token);
  }
  stream->call = DataStubForNewStream()->PrepareCall(
      &stream->context, "/ps.proto.ParameterServer/DataStream",
      poller_->queue());
  Stream* raw = stream.get();
  std::unique_ptr<Stream> finished;
  std::shared_ptr<Pending> first;
  {
    absl::MutexLock lock(&mu_);
    // Started before it is published, so no Send() writes to it earlier.
    // (Their completions only arrive on the queue: nothing runs inline.)
    raw->call->StartCall(&raw->start_tag);
    raw->call->Read(&raw->response, &raw->read_tag);
    finished = std::move(stream_);  // its last event was handled
    stream_ = std::move(stream);
    state_ = State::kOpen;
    ++streams_opened_;
    for (const auto& [id, entry] : pending_) raw->queue.push_back(entry);
    first = NextWriteLocked(raw);
  }
  finished.reset();
  if (first != nullptr) StartWrite(raw, std::move(first));
}

std::string ServerConnection::CurrentAddress() const {
  absl::MutexLock lock(&mu_);
  return data_address_;
}

ServerConnection::CurrentStubs ServerConnection::CurrentFailoverStubs() {
  const std::string address = options_.resolve_address();  // outside mu_
  absl::MutexLock lock(&mu_);
  if (!address.empty() && address != data_address_) {
    data_address_ = address;
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(address, credentials_, channel_args_);
    FailoverStubs stubs;
    stubs.data = std::make_unique<grpc::GenericStub>(channel);
    stubs.control = proto::ParameterServer::NewStub(channel);
    failover_stubs_.push_back(std::move(stubs));
  }
  // Elements are never removed, and a vector's growth moves the unique_ptrs,
  // not the stubs: the stub pointers handed out stay valid.
  if (failover_stubs_.empty()) return {};
  return {failover_stubs_.back().data.get(),
          failover_stubs_.back().control.get()};
}

grpc::GenericStub* ServerConnection::DataStubForNewStream() {
  if (!options_.resolve_address) return data_stub_.get();
  const CurrentStubs stubs = CurrentFailoverStubs();
  return stubs.data == nullptr ? data_stub_.get() : stubs.data;
}

proto::ParameterServer::Stub* ServerConnection::stub() {
  if (!options_.resolve_address) return stub_.get();
  const CurrentStubs stubs = CurrentFailoverStubs();
  return stubs.control == nullptr ? stub_.get() : stubs.control;
}

std::shared_ptr<ServerConnection::Pending> ServerConnection::NextWriteLocked(
    Stream* stream) {
  // gRPC sends the start (initial metadata) with the writes' operation set:
  // the first write waits for the start to complete.
  if (stream->writing != nullptr || stream->starting || stream->closing ||
      stream->queue.empty()) {
    return nullptr;
  }
  stream->writing = std::move(stream->queue.front());
  stream->queue.pop_front();
  return stream->writing;
}

void ServerConnection::StartWrite(Stream* stream,
                                  std::shared_ptr<Pending> entry) {
  // `entry` is also held by stream->writing until OnWriteDone.
  stream->call->Write(entry->wire, &stream->write_tag);
}

void ServerConnection::OnResponse(Stream* stream,
                                  const grpc::ByteBuffer& wire) {
  // The buffer's slices are dumped once for both passes (the id, then the
  // whole message) and released when this returns.
  ReceivedDataResponse& received = stream->received;
  struct ReleaseOnReturn {
    ~ReleaseOnReturn() { received->Release(); }
    ReceivedDataResponse* received;
  } release{&received};
  absl::Status opened = received.Open(wire);
  absl::StatusOr<uint64_t> id =
      opened.ok() ? received.RequestId() : absl::StatusOr<uint64_t>(opened);
  if (!id.ok()) {
    // A broken peer: drop the stream; the pending requests are resent on a
    // new one (or fail after max_reconnect_attempts).
    stream->context.TryCancel();
    return;
  }
  std::shared_ptr<Pending> entry;
  {
    absl::MutexLock lock(&mu_);
    // The server is answering again (a replica that is not primary does not
    // count: see below).
    if (!options_.resolve_address) failed_attempts_ = 0;
    auto it = pending_.find(*id);
    if (it == pending_.end()) return;  // e.g. a duplicate answer
    entry = std::move(it->second);
    pending_.erase(it);
  }
  // The entry is ours now: nothing else completes it, so its destination
  // may be written outside the lock.
  proto::DataResponse* response = &stream->decoded;
  bool delivered = false;
  absl::Status status =
      received.Decode(entry->values_into, response, &delivered);
  if (!status.ok()) {
    entry->done(absl::InternalError(absl::StrCat(
                    "server ", CurrentAddress(), " sent a ",
                    status.message())),
                nullptr);
    return;
  }
  status = FromResponseStatus(response->status_code(),
                              response->status_message());
  if (options_.resolve_address) {
    absl::MutexLock lock(&mu_);
    if (status.code() == absl::StatusCode::kUnavailable) {
      // Not (or no longer) the primary: resent, unchanged, on a stream to
      // the primary resolve_address names next.
      pending_.emplace(*id, std::move(entry));
      stream->context.TryCancel();
      return;
    }
    failed_attempts_ = 0;
  }
  if (status.ok() && !entry->values_into.empty() && !delivered) {
    status = absl::InternalError(absl::StrCat(
        "server ", CurrentAddress(), " returned ", response->values().size(),
        " bytes of values for a pull of ", entry->values_into.size(),
        " bytes"));
  }
  entry->done(status, response);
}

void ServerConnection::OnStreamEvent(Stream* stream, StreamEvent event,
                                     bool ok) {
  std::shared_ptr<Pending> next;
  bool finish = false;
  switch (event) {
    case StreamEvent::kRead:
      if (ok) {
        OnResponse(stream, stream->response);
        stream->call->Read(&stream->response, &stream->read_tag);
        return;
      }
      break;
    case StreamEvent::kFinish:
      OnStreamDone(stream, stream->status);
      return;
    case StreamEvent::kStart:
    case StreamEvent::kWrite:
      break;
  }
  {
    absl::MutexLock lock(&mu_);
    switch (event) {
      case StreamEvent::kStart:
        stream->starting = false;  // a failed start fails the read too
        break;
      case StreamEvent::kRead:
        stream->read_failed = stream->closing = true;
        break;
      case StreamEvent::kWrite:
        stream->writing = nullptr;
        // The entry stays pending: resent on the next stream. A failed
        // write means the call is over, so the read fails as well.
        if (!ok) stream->closing = true;
        break;
      case StreamEvent::kFinish:
        break;
    }
    next = NextWriteLocked(stream);
    if (stream->read_failed && stream->writing == nullptr &&
        !stream->starting && !stream->finishing) {
      stream->finishing = finish = true;
    }
  }
  if (next != nullptr) StartWrite(stream, std::move(next));
  if (finish) stream->call->Finish(&stream->status, &stream->finish_tag);
}

void ServerConnection::OnStreamDone(Stream* stream,
                                    const grpc::Status& status) {
  std::map<uint64_t, std::shared_ptr<Pending>> to_fail;
  absl::Status failure;
  {
    absl::MutexLock lock(&mu_);
    stream->done = true;
    cv_.SignalAll();
    if (shutting_down_) {
      to_fail.swap(pending_);
      failure = absl::CancelledError(
          absl::StrCat("connection to server ", options_.address, " closed"));
      state_ = State::kIdle;
    } else if (!IsTransient(status.error_code())) {
      to_fail.swap(pending_);
      failure = absl::Status(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("data stream to server ", data_address_,
                       " failed: ", status.error_message()));
      state_ = State::kIdle;
      failed_attempts_ = 0;
    } else if (pending_.empty()) {
      state_ = State::kIdle;  // reconnect when there is something to send
    } else if (++failed_attempts_ > options_.client.max_reconnect_attempts) {
      to_fail.swap(pending_);
      failure = absl::UnavailableError(absl::StrCat(
          "server ", data_address_, " unreachable after ",
          options_.client.max_reconnect_attempts,
          " reconnect attempts; last error: ",
          grpc::StatusCode(status.error_code()) == grpc::StatusCode::OK
              ? "stream closed by the server"
              : status.error_message()));
      state_ = State::kIdle;
      failed_attempts_ = 0;
    } else {
      state_ = State::kConnecting;
      next_attempt_ = absl::Now() + Backoff(options_.client, failed_attempts_);
    }
  }
  FailAll(std::move(to_fail), failure);
}

void ServerConnection::FailAll(
    std::map<uint64_t, std::shared_ptr<Pending>> entries,
    const absl::Status& status) {
  if (entries.empty()) return;
  for (auto& [id, entry] : entries) entry->done(status, nullptr);
  poller_->Notify();
}

}  // namespace ps
