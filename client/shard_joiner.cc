#include "client/shard_joiner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "proto/membership_error.h"
#include "proto/ops.h"

namespace ps {
namespace {

// A client-side payload (never on the wire): "applied=0,2;not_applied=1;
// unknown=".
constexpr char kPushOutcomeUrl[] = "ps.client/PushOutcome";

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::shared_ptr<ShardJoiner> ShardJoiner::Create(
    int64_t expected, std::shared_ptr<Future::State> parent,
    Operation operation) {
  return std::make_shared<ShardJoiner>(expected, std::move(parent),
                                       std::move(operation));
}

ShardJoiner::ShardJoiner(int64_t expected,
                         std::shared_ptr<Future::State> parent,
                         Operation operation)
    : parent_(std::move(parent)),
      operation_(std::move(operation)),
      remaining_(expected) {
  ABSL_ASSERT(expected > 0);
}

void ShardJoiner::Done(int shard, const absl::Status& status,
                       const proto::DataResponse* response) {
  if (!status.ok() || IsPush(operation_.op)) {
    absl::MutexLock lock(&mu_);
    if (status.ok()) {
      succeeded_.push_back(shard);
    } else {
      Failure failure;
      failure.shard = shard;
      failure.status = status;
      failure.answered = response != nullptr;
      if (response != nullptr) {
        failure.membership = response->membership();
        failure.step = response->step();
      }
      failures_.push_back(std::move(failure));
    }
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    result = Result();
  }
  parent_->Complete(std::move(result));
}

ShardJoiner::Completion::Completion(int64_t requests,
                                    std::shared_ptr<Future::State> parent,
                                    Operation operation) {
  if (requests > 1) {
    joiner_ = Create(requests, std::move(parent), std::move(operation));
  } else {
    parent_ = std::move(parent);
    operation_ = std::move(operation);
  }
}

void ShardJoiner::Completion::Done(int shard, const absl::Status& status,
                                   const proto::DataResponse* response) const {
  if (joiner_ != nullptr) {
    joiner_->Done(shard, status, response);
  } else if (status.ok()) {
    parent_->Complete(absl::OkStatus());
  } else {
    ShardJoiner(1, parent_, operation_).Done(shard, status, response);
  }
}

absl::Status ShardJoiner::Result() {
  if (failures_.empty()) return absl::OkStatus();
  const Failure& first = failures_.front();
  absl::Status result = first.status;
  for (const Failure& f : failures_) {
    if (f.membership == proto::MEMBERSHIP_MEMBER) continue;
    proto::MembershipError error;
    error.set_state(f.membership);
    error.set_current_step(f.step);
    result.SetPayload(kMembershipErrorUrl,
                      absl::Cord(error.SerializeAsString()));
    break;
  }
  if (!IsPush(operation_.op)) return result;

  PushOutcome outcome;
  for (const Failure& f : failures_) {
    (f.answered ? outcome.not_applied : outcome.unknown).push_back(f.shard);
  }
  outcome.unknown = Sorted(std::move(outcome.unknown));
  std::vector<int> refused;
  for (int shard : Sorted(std::move(outcome.not_applied))) {
    if (!Contains(outcome.unknown, shard)) refused.push_back(shard);
  }
  outcome.not_applied = std::move(refused);
  for (int shard : Sorted(succeeded_)) {
    if (!Contains(outcome.unknown, shard) &&
        !Contains(outcome.not_applied, shard)) {
      outcome.applied.push_back(shard);
    }
  }
  if (!outcome.applied.empty()) {
    // Partially applied: say where, so nobody mistakes it for "not applied".
    auto name = [this](const std::vector<int>& shards) {
      std::vector<std::string> parts;
      for (int s : shards) {
        const std::string address =
            operation_.addresses != nullptr &&
                    s < static_cast<int>(operation_.addresses->size())
                ? (*operation_.addresses)[s]
                : "?";
        parts.push_back(absl::StrCat(s, " (", address, ")"));
      }
      return absl::StrJoin(parts, ", ");
    };
    std::string message =
        absl::StrCat("push to table '", operation_.table,
                     "' was applied on shard(s) ", name(outcome.applied));
    if (!outcome.not_applied.empty()) {
      absl::StrAppend(&message, "; refused (not applied) by shard(s) ",
                      name(outcome.not_applied));
    }
    if (!outcome.unknown.empty()) {
      absl::StrAppend(&message, "; no answer from shard(s) ",
                      name(outcome.unknown),
                      " after the reconnect attempts (applied or not: "
                      "unknown)");
    }
    absl::StrAppend(&message, ": ", first.status.message());
    absl::Status partial(result.code(), message);
    result.ForEachPayload(
        [&partial](absl::string_view url, const absl::Cord& payload) {
          partial.SetPayload(url, payload);
        });
    result = std::move(partial);
  }
  return WithPushOutcome(std::move(result), outcome);
}

absl::Status WithPushOutcome(absl::Status status, const PushOutcome& outcome) {
  if (status.ok()) return status;
  status.SetPayload(
      kPushOutcomeUrl,
      absl::Cord(absl::StrCat("applied=", absl::StrJoin(outcome.applied, ","),
                              ";not_applied=",
                              absl::StrJoin(outcome.not_applied, ","),
                              ";unknown=",
                              absl::StrJoin(outcome.unknown, ","))));
  return status;
}

std::optional<PushOutcome> PushOutcomeOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  auto payload = status.GetPayload(kPushOutcomeUrl);
  if (!payload.has_value()) return std::nullopt;
  PushOutcome outcome;
  for (absl::string_view field :
       absl::StrSplit(std::string(*payload), ';')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(field, absl::MaxSplits('=', 1));
    std::vector<int>* into = kv.first == "applied"       ? &outcome.applied
                             : kv.first == "not_applied" ? &outcome.not_applied
                             : kv.first == "unknown"     ? &outcome.unknown
                                                         : nullptr;
    if (into == nullptr) return std::nullopt;
    for (absl::string_view item : absl::StrSplit(kv.second, ',',
                                                 absl::SkipEmpty())) {
      int shard = 0;
      if (!absl::SimpleAtoi(item, &shard)) return std::nullopt;
      into->push_back(shard);
    }
  }
  return outcome;
}

}  // namespace ps
