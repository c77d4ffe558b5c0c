#include "server/checkpoint_peers.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/channel_credentials.h"
#include "common/status_macros.h"
#include "server/bearer_auth.h"
#include "server/unary_call.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(5);
// How soon calls in flight notice Cancel().
constexpr absl::Duration kCancelCheck = absl::Milliseconds(100);
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

absl::Status CancelledError(uint32_t shard) {
  return absl::CancelledError(absl::StrCat(
      "shard ", shard, ": stopped while agreeing on a cluster checkpoint "
      "with the other shards"));
}

// One call of a round; lives until its completion was taken off the queue.
struct InventoryCall {
  grpc::ClientContext context;
  proto::CheckpointInventoryResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<
      proto::CheckpointInventoryResponse>>
      reader;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointPeers>> CheckpointPeers::Create(
    const ClusterConfig& config, uint32_t shard, uint64_t fingerprint) {
  std::unique_ptr<CheckpointPeers> peers(
      new CheckpointPeers(shard, fingerprint));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                   ChannelCredentials(config.tls));
  grpc::ChannelArguments args;
  if (!config.tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(config.tls.server_name_override);
  }
  peers->authorization_ = ExpectedAuthorization(config.auth_token);
  peers->addresses_ = config.servers;
  for (uint32_t j = 0; j < config.servers.size(); ++j) {
    peers->stubs_.push_back(
        j == shard ? nullptr
                   : proto::CheckpointPeers::NewStub(grpc::CreateCustomChannel(
                         config.servers[j], credentials, args)));
  }
  return peers;
}

absl::StatusOr<ShardCheckpoints> CheckpointPeers::FromResponse(
    uint32_t j, const proto::CheckpointInventoryResponse& response) const {
  if (response.shard_index() != j ||
      response.num_shards() != addresses_.size() ||
      response.partition_fingerprint() != fingerprint_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", addresses_[j], " (cluster.servers[", j,
        "]) answered as shard ", response.shard_index(), " of ",
        response.num_shards(), " with partition fingerprint ",
        absl::Hex(response.partition_fingerprint()), ", but this server's "
        "config has ", addresses_.size(), " shards with partition "
        "fingerprint ", absl::Hex(fingerprint_),
        ": every server must run with the same cluster config (servers and "
        "tables)"));
  }
  ShardCheckpoints held;
  held.dir = response.directory();
  held.restored = response.restored();
  for (uint64_t id : response.valid_ids()) held.parts[id] = "";
  for (const proto::DamagedCheckpointPart& d : response.damaged()) {
    held.parts[d.checkpoint_id()] = d.problem();
  }
  return held;
}

absl::Status CheckpointPeers::AskRound(
    absl::Time deadline, std::vector<std::optional<ShardCheckpoints>>* answers,
    std::vector<std::string>* errors) {
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<InventoryCall>> calls(addresses_.size());
  proto::CheckpointInventoryRequest request;
  request.set_asking_shard(shard_);
  int pending = 0;
  for (uint32_t j = 0; j < addresses_.size(); ++j) {
    if (j == shard_ || (*answers)[j].has_value()) continue;
    calls[j] = std::make_unique<InventoryCall>();
    calls[j]->context.set_deadline(absl::ToChronoTime(deadline));
    if (!authorization_.empty()) {
      calls[j]->context.AddMetadata("authorization", authorization_);
    }
    calls[j]->reader =
        stubs_[j]->AsyncGetCheckpointInventory(&calls[j]->context, request, &cq);
    calls[j]->reader->Finish(&calls[j]->response, &calls[j]->status,
                             reinterpret_cast<void*>(uintptr_t{j}));
    ++pending;
  }
  absl::Status fatal;
  void* tag = nullptr;
  bool ok = false;
  bool cancelled = false;
  // Every call ends by its deadline (or soon after Cancel()), so this loop
  // does too.
  while (pending > 0) {
    const grpc::CompletionQueue::NextStatus next = cq.AsyncNext(
        &tag, &ok, absl::ToChronoTime(absl::Now() + kCancelCheck));
    if (next == grpc::CompletionQueue::SHUTDOWN) break;
    if (next == grpc::CompletionQueue::TIMEOUT) {
      if (!cancelled && cancelled_.HasBeenNotified()) {
        cancelled = true;
        for (const auto& call : calls) {
          if (call != nullptr) call->context.TryCancel();
        }
      }
      continue;
    }
    --pending;
    const uint32_t j = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(tag));
    const grpc::Status& status = calls[j]->status;
    if (!status.ok()) {
      // A call cut by the final deadline says less than the failure before.
      if ((*errors)[j].empty() ||
          status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        (*errors)[j] = absl::StrCat(
            absl::StatusCodeToString(
                static_cast<absl::StatusCode>(status.error_code())),
            ": ", status.error_message());
      }
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        fatal = absl::FailedPreconditionError(absl::StrCat(
            "server ", addresses_[j], " (shard ", j, ") refuses to agree on a "
            "checkpoint: ", status.error_message()));
      }
      continue;
    }
    absl::StatusOr<ShardCheckpoints> held = FromResponse(j, calls[j]->response);
    if (!held.ok()) {
      fatal = held.status();
      continue;
    }
    (*answers)[j] = *std::move(held);
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (cancelled) return CancelledError(shard_);
  return fatal;
}

void CheckpointPeers::Cancel() {
  if (!cancelled_.HasBeenNotified()) cancelled_.Notify();
}

absl::StatusOr<std::vector<std::optional<ShardCheckpoints>>>
CheckpointPeers::Ask(absl::Time deadline, bool until_all) {
  std::vector<std::optional<ShardCheckpoints>> answers(addresses_.size());
  std::vector<std::string> errors(addresses_.size());
  absl::Duration backoff = kFirstBackoff;
  for (int round = 0;; ++round) {
    if (cancelled_.HasBeenNotified()) return CancelledError(shard_);
    const absl::Time call_deadline =
        until_all ? std::min(deadline, absl::Now() + kCallTimeout) : deadline;
    RETURN_IF_ERROR(AskRound(call_deadline, &answers, &errors));
    std::vector<std::string> silent;
    for (uint32_t j = 0; j < addresses_.size(); ++j) {
      if (j == shard_ || answers[j].has_value()) continue;
      silent.push_back(absl::StrCat(
          j, " (", addresses_[j], ": ",
          errors[j].empty() ? "no answer" : errors[j], ")"));
    }
    if (silent.empty() || !until_all) return answers;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "shard ", shard_, " cannot agree on a cluster checkpoint: no answer "
          "from shard(s) ", absl::StrJoin(silent, ", "),
          " within server.checkpoint_peer_timeout_s (checkpoint_agreement: "
          "peers needs every server up to restore). Start the missing "
          "servers, or raise server.checkpoint_peer_timeout_s"));
    }
    if (round % 10 == 0) {
      spdlog::info("shard {}: waiting for shard(s) {} to answer about their "
                   "checkpoints",
                   shard_, absl::StrJoin(silent, ", "));
    }
    cancelled_.WaitForNotificationWithTimeout(
        std::min(backoff, deadline - absl::Now()));
    backoff = std::min(2 * backoff, kMaxBackoff);
  }
}

CheckpointPeerService::CheckpointPeerService(Checkpointer* checkpointer,
                                             bool peers_mode, uint32_t shard,
                                             uint32_t num_shards,
                                             uint64_t fingerprint,
                                             const std::string& auth_token)
    : checkpointer_(checkpointer),
      peers_mode_(peers_mode),
      shard_(shard),
      num_shards_(num_shards),
      fingerprint_(fingerprint),
      expected_authorization_(ExpectedAuthorization(auth_token)) {}

void CheckpointPeerService::Serve(ServerQueue* queue) {
  using Request = proto::CheckpointInventoryRequest;
  using Response = proto::CheckpointInventoryResponse;
  UnaryMethod<Request, Response> method;
  method.request = [this](grpc::ServerContext* context, Request* request,
                          grpc::ServerAsyncResponseWriter<Response>* writer,
                          grpc::ServerCompletionQueue* cq, void* tag) {
    RequestGetCheckpointInventory(context, request, writer, cq, cq, tag);
  };
  method.handle = [this](const grpc::ServerContext& context,
                         const Request& request, Response* response,
                         UnaryDone done) {
    if (absl::Status auth = CheckBearer(context, expected_authorization_);
        !auth.ok()) {
      done(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(auth.message())));
      return;
    }
    done(Answer(request, response));
  };
  ServeUnary(queue, std::move(method));
}

grpc::Status CheckpointPeerService::Answer(
    const proto::CheckpointInventoryRequest& request,
    proto::CheckpointInventoryResponse* response) const {
  if (checkpointer_ == nullptr || !peers_mode_) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("shard ", shard_, " runs without "
                     "server.checkpoint_agreement: peers (",
                     checkpointer_ == nullptr ? "no server.checkpoint_dir"
                                              : "shared_dir",
                     "); shard ", request.asking_shard(),
                     " has another config"));
  }
  std::optional<ShardCheckpoints> held =
      checkpointer_->Inventory(request.asking_shard());
  if (!held.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("shard ", shard_, " has not verified its "
                                     "checkpoint files yet; retry"));
  }
  response->set_shard_index(shard_);
  response->set_num_shards(num_shards_);
  response->set_partition_fingerprint(fingerprint_);
  response->set_directory(held->dir);
  response->set_restored(held->restored);
  for (auto it = held->parts.rbegin(); it != held->parts.rend(); ++it) {
    if (it->second.empty()) {
      response->add_valid_ids(it->first);
    } else {
      proto::DamagedCheckpointPart* damaged = response->add_damaged();
      damaged->set_checkpoint_id(it->first);
      damaged->set_problem(it->second);
    }
  }
  return grpc::Status::OK;
}

}  // namespace ps
