#include "server/rows/sparse_rows.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "server/initializer.h"

namespace ps {

absl::StatusOr<std::unique_ptr<SparseRows>> SparseRows::Create(
    const TableConfig& config, uint32_t shard_index, uint32_t num_shards,
    ParamStore* store, MemoryBudget* budget, bool pulls_count) {
  ASSIGN_OR_RETURN(RowCost cost, SparseRowCost(config));
  return std::unique_ptr<SparseRows>(new SparseRows(
      config, shard_index, num_shards, store, budget, cost, pulls_count));
}

SparseRows::SparseRows(const TableConfig& config, uint32_t shard_index,
                       uint32_t num_shards, ParamStore* store,
                       MemoryBudget* budget, RowCost cost, bool pulls_count)
    : config_(config),
      shard_index_(shard_index),
      num_shards_(num_shards),
      store_(store),
      budget_(budget),
      cost_(cost),
      pulls_count_(pulls_count),
      admission_(CreateAdmissionPolicy(config.admission,
                                       config.initializer.seed ^ config.table_id,
                                       shard_index)),
      index_(EvictionRuleCount(config.eviction)),
      eviction_(CreateEvictionPolicies(config.eviction, &index_)) {}

SparseRows::~SparseRows() {
  if (budget_ != nullptr) budget_->Release(charged_ + pending_charged_);
}

RowTime SparseRows::TimeAt(absl::Time now) const {
  return RowTime{clock_, absl::ToUnixSeconds(now)};
}

absl::Status SparseRows::Resolve(absl::Span<const uint64_t> ids, bool push,
                                 int64_t clock, absl::Time now,
                                 uint64_t push_key,
                                 std::vector<uint64_t>* rows) {
  if (!push && !pulls_count_) {
    rows->resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint32_t slot = index_.Find(ids[i]);
      (*rows)[i] = slot == RowIndex::kNoSlot ? kNoRow : slot;
    }
    return absl::OkStatus();
  }
  const int64_t old_clock = clock_;
  if (push) clock_ = std::max(clock_, clock);
  const RowTime t = TimeAt(now);
  rows->assign(ids.size(), kNoRow);
  std::vector<size_t> create;   // positions of ids that get a row now
  std::vector<size_t> counted;  // pushed ids that stay without one
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t slot = index_.Find(ids[i]);
    if (slot != RowIndex::kNoSlot) {
      (*rows)[i] = slot;
    } else if (push ? admission_->WouldAdmit(ids[i], push_key)
                    : admission_->CreatesOnPull()) {
      create.push_back(i);
    } else if (push) {
      counted.push_back(i);
    }
  }
  // A refused request changes nothing: the clock goes back, no rows.
  auto refuse = [&](absl::Status s) {
    clock_ = old_clock;
    rows->clear();
    return s;
  };
  // Counted ids may each become a pending count: charged (at most that
  // many) before anything changes, settled to the real count after.
  const uint64_t tentative =
      budget_ != nullptr ? counted.size() * kPendingBytesPerId : 0;
  if (tentative > 0) {
    absl::Status s = budget_->TryCharge(
        tentative, absl::StrCat("table '", config_.name, "': ", counted.size(),
                                " ids counted for admission at ",
                                kPendingBytesPerId, " bytes each"));
    if (!s.ok()) return refuse(s);
  }
  if (!create.empty()) {
    absl::Status s = CreateRows(ids, create, t, rows);
    if (!s.ok()) {
      if (tentative > 0) budget_->Release(tentative);
      return refuse(s);
    }
  }
  if (push) {
    for (size_t i : create) admission_->Record(ids[i], /*admitted=*/true);
    for (size_t i : counted) admission_->Record(ids[i], /*admitted=*/false);
    SettlePendingCharge(tentative);
  }
  if (eviction_.empty()) return absl::OkStatus();
  // Accesses of the rows that existed (created rows counted at creation).
  std::vector<uint32_t> accessed;
  accessed.reserve(ids.size());
  size_t next_created = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (next_created < create.size() && create[next_created] == i) {
      ++next_created;
    } else if ((*rows)[i] != kNoRow) {
      accessed.push_back(static_cast<uint32_t>((*rows)[i]));
    }
  }
  for (const auto& policy : eviction_) policy->OnAccess(accessed, push, t);
  return absl::OkStatus();
}

absl::Status SparseRows::CreateRows(absl::Span<const uint64_t> ids,
                                    const std::vector<size_t>& at,
                                    const RowTime& t,
                                    std::vector<uint64_t>* rows) {
  const uint64_t k = at.size();
  const uint64_t reuse = std::min<uint64_t>(k, index_.num_free());
  const uint64_t append = k - reuse;
  if (index_.num_slots() + append > RowIndex::kMaxSlots) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "table '", config_.name, "' cannot hold more than ",
        RowIndex::kMaxSlots, " rows per shard"));
  }
  const uint64_t bytes = k * cost_.total();
  if (budget_ != nullptr) {
    RETURN_IF_ERROR(budget_->TryCharge(
        bytes, absl::StrCat("table '", config_.name, "': ", k,
                            " new rows of ", cost_.total(), " bytes")));
  }
  const uint32_t dim = config_.dim;
  std::vector<float> fresh(k * dim);
  for (uint64_t j = 0; j < k; ++j) {
    InitSparseRow(config_.initializer, ids[at[j]],
                  absl::Span<float>(fresh.data() + j * dim, dim));
  }
  // Append first: it is the step that can fail, and the index hands out the
  // free rows before new ones, so rows reuse..k-1 land at the store's end in
  // order.
  if (append > 0) {
    absl::Status s = store_->Append(
        absl::MakeConstSpan(fresh).subspan(reuse * dim, append * dim));
    if (!s.ok()) {
      if (budget_ != nullptr) budget_->Release(bytes);
      return s;
    }
  }
  std::vector<uint64_t> reused(reuse);
  std::vector<uint32_t> created(k);
  for (uint64_t j = 0; j < k; ++j) {
    const uint32_t slot = index_.Insert(ids[at[j]]);
    (*rows)[at[j]] = slot;
    created[j] = slot;
    if (j < reuse) reused[j] = slot;
  }
  for (const auto& policy : eviction_) policy->OnCreate(created, t);
  if (reuse > 0) {
    // Checked rows of the store's own size: cannot fail but is reported.
    RETURN_IF_ERROR(store_->ResetRows(
        reused, dim, absl::MakeConstSpan(fresh).subspan(0, reuse * dim)));
  }
  admitted_ += k;
  charged_ += bytes;
  return absl::OkStatus();
}

absl::Status SparseRows::Read(absl::Span<const uint64_t> ids,
                              absl::Span<const uint64_t> rows,
                              absl::Span<float> out) const {
  const uint32_t dim = config_.dim;
  if (std::find(rows.begin(), rows.end(), kNoRow) == rows.end()) {
    return store_->ReadRows(rows, dim, out);
  }
  std::vector<uint64_t> stored;
  std::vector<size_t> at;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == kNoRow) {
      InitSparseRow(config_.initializer, ids[i], out.subspan(i * dim, dim));
    } else {
      stored.push_back(rows[i]);
      at.push_back(i);
    }
  }
  if (stored.empty()) return absl::OkStatus();
  std::vector<float> values(stored.size() * dim);
  RETURN_IF_ERROR(store_->ReadRows(stored, dim, absl::MakeSpan(values)));
  for (size_t k = 0; k < at.size(); ++k) {
    std::copy_n(values.data() + k * dim, dim, out.data() + at[k] * dim);
  }
  return absl::OkStatus();
}

uint64_t SparseRows::Sweep(absl::Time now) {
  if (eviction_.empty()) return 0;
  const RowTime t = TimeAt(now);
  uint64_t dropped = 0;
  std::vector<uint32_t> victims;
  // Rule by rule, so max_rows_per_shard counts the rows the TTL rules left.
  for (const auto& policy : eviction_) {
    victims.clear();
    policy->Expired(t, index_.size(), &victims);
    for (uint32_t slot : victims) Drop(slot);
    dropped += victims.size();
  }
  return dropped;
}

void SparseRows::SettlePendingCharge(uint64_t tentative) {
  const uint64_t now = admission_->pending() * kPendingBytesPerId;
  if (budget_ != nullptr) {
    const uint64_t held = pending_charged_ + tentative;
    if (now > held) budget_->ForceCharge(now - held);
    if (now < held) budget_->Release(held - now);
  }
  pending_charged_ = now;
}

// The rules' entries of a dropped row go stale with its index record.
void SparseRows::Drop(uint32_t slot) {
  index_.Remove(slot);
  ++evicted_;
  charged_ -= cost_.total();
  if (budget_ != nullptr) budget_->Release(cost_.total());
}

absl::Status SparseRows::Snapshot(TableState* state) const {
  const uint32_t dim = config_.dim;
  std::vector<std::pair<uint64_t, uint32_t>> by_id;  // (id, slot)
  by_id.reserve(index_.size());
  for (uint64_t s = 0; s < index_.num_slots(); ++s) {
    const uint32_t slot = static_cast<uint32_t>(s);
    if (index_.live(slot)) by_id.emplace_back(index_.id_at(slot), slot);
  }
  std::sort(by_id.begin(), by_id.end());
  const uint64_t n = by_id.size();
  std::vector<uint64_t> slots(n);
  std::vector<uint32_t> row_of_slot(index_.num_slots(), RowIndex::kNoSlot);
  state->rows.resize(n);
  for (uint64_t r = 0; r < n; ++r) {
    slots[r] = by_id[r].second;
    row_of_slot[by_id[r].second] = static_cast<uint32_t>(r);
    state->rows[r] = {by_id[r].first, r};
  }
  state->values.resize(n * dim);
  state->slots.assign(store_->num_slots(), std::vector<float>(n * dim));
  if (n > 0) {
    RETURN_IF_ERROR(store_->ReadRows(slots, dim, absl::MakeSpan(state->values)));
    for (int q = 0; q < store_->num_slots(); ++q) {
      RETURN_IF_ERROR(store_->ReadSlotRows(q, slots, dim,
                                           absl::MakeSpan(state->slots[q])));
    }
  }
  RowLifecycleState& life = state->lifecycle;
  life.table_clock = clock_;
  life.rows_admitted = admitted_;
  life.rows_evicted = evicted_;
  life.pending_counts = admission_->ExportCounts();
  life.eviction.clear();
  for (const auto& policy : eviction_) {
    const EvictionOrder order = policy->Export();
    RowLifecycleState::Order saved;
    saved.policy = order.policy;
    for (uint32_t slot : order.slots) saved.rows.push_back(row_of_slot[slot]);
    saved.stamps = order.stamps;
    life.eviction.push_back(std::move(saved));
  }
  return absl::OkStatus();
}

absl::Status SparseRows::Restore(const TableState& state) {
  const uint32_t dim = config_.dim;
  if (index_.num_slots() != 0 || store_->size() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", config_.name, "' already has rows; restore needs a fresh "
        "table"));
  }
  const uint64_t n = state.values.size() / dim;
  if (state.values.size() % dim != 0 || state.rows.size() != n) {
    return absl::DataLossError(absl::StrCat(
        "table '", config_.name, "': ", state.rows.size(), " row ids for ",
        state.values.size(), " values of rows of dim ", dim));
  }
  if (n > RowIndex::kMaxSlots) {
    return absl::DataLossError(absl::StrCat("table '", config_.name, "': ", n,
                                            " rows exceed the per-shard limit"));
  }
  // Row r of the store is the checkpoint's row r, so the index must give
  // id_of_row[r] slot r: insert in row order into the empty index.
  std::vector<uint64_t> id_of_row(n);
  std::vector<bool> used(n, false);
  for (const auto& [id, row] : state.rows) {
    if (row >= n || used[row]) {
      return absl::DataLossError(absl::StrCat(
          "table '", config_.name, "': row map entry id ", id, " -> row ", row,
          " is out of range or duplicated"));
    }
    const uint32_t owner = SparseShardOf(id, num_shards_);
    if (owner != shard_index_) {
      return absl::DataLossError(absl::StrCat(
          "table '", config_.name, "': checkpointed id ", id,
          " belongs to shard ", owner, ", not ", shard_index_));
    }
    used[row] = true;
    id_of_row[row] = id;
  }
  index_.Reserve(n);
  for (uint64_t r = 0; r < n; ++r) {
    if (index_.Find(id_of_row[r]) != RowIndex::kNoSlot) {
      index_.Clear();
      return absl::DataLossError(absl::StrCat(
          "table '", config_.name, "': id ", id_of_row[r],
          " has two rows in the checkpoint"));
    }
    index_.Insert(id_of_row[r]);
  }
  const RowLifecycleState& life = state.lifecycle;
  absl::Status s = admission_->ImportCounts(life.pending_counts);
  if (s.ok()) s = RestoreEviction(state, absl::Now());
  if (s.ok() && n > 0) s = store_->Append(state.values);
  for (size_t q = 0; s.ok() && n > 0 && q < state.slots.size(); ++q) {
    s = store_->WriteSlot(static_cast<int>(q), 0, state.slots[q]);
  }
  if (!s.ok()) {
    index_.Clear();
    for (const auto& policy : eviction_) policy->Import(EvictionOrder());
    if (absl::IsInvalidArgument(s)) {
      return absl::DataLossError(
          absl::StrCat("table '", config_.name, "': ", s.message()));
    }
    return s;
  }
  clock_ = life.table_clock;
  admitted_ = life.rows_admitted;
  evicted_ = life.rows_evicted;
  charged_ = n * cost_.total();
  pending_charged_ = admission_->pending() * kPendingBytesPerId;
  if (budget_ != nullptr) budget_->ForceCharge(charged_ + pending_charged_);
  return absl::OkStatus();
}

// Each rule takes its saved order; a rule the checkpoint does not have (the
// config added it) starts with every row touched now, in row order.
absl::Status SparseRows::RestoreEviction(const TableState& state,
                                         absl::Time now) {
  const uint64_t n = state.rows.size();
  const RowLifecycleState& life = state.lifecycle;
  const RowTime t{life.table_clock, absl::ToUnixSeconds(now)};
  for (const auto& policy : eviction_) {
    const RowLifecycleState::Order* saved = nullptr;
    for (const RowLifecycleState::Order& o : life.eviction) {
      if (o.policy == policy->name()) saved = &o;
    }
    EvictionOrder order;
    order.policy = policy->name();
    if (saved == nullptr) {
      for (uint64_t r = 0; r < n; ++r) {
        order.slots.push_back(static_cast<uint32_t>(r));
        order.stamps.push_back(policy->StampOf(t));
      }
      policy->Import(order);
      continue;
    }
    if (saved->rows.size() != n || saved->stamps.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "eviction rule ", policy->name(), " orders ", saved->rows.size(),
          " rows of ", n));
    }
    std::vector<bool> seen(n, false);
    for (uint64_t row : saved->rows) {
      if (row >= n || seen[row]) {
        return absl::InvalidArgumentError(
            absl::StrCat("eviction rule ", policy->name(), ": row ", row,
                         " is out of range or listed twice"));
      }
      seen[row] = true;
      order.slots.push_back(static_cast<uint32_t>(row));
    }
    order.stamps = saved->stamps;
    policy->Import(order);
  }
  return absl::OkStatus();
}

absl::Status SparseRows::ReadLiveRows(
    uint64_t* cursor, uint64_t max_rows, bool with_state,
    std::vector<uint64_t>* ids, std::vector<float>* values,
    std::vector<std::vector<float>>* state) const {
  std::vector<uint64_t> slots;
  uint64_t s = *cursor;
  for (; s < index_.num_slots() && slots.size() < max_rows; ++s) {
    if (!index_.live(static_cast<uint32_t>(s))) continue;
    slots.push_back(s);
    ids->push_back(index_.id_at(static_cast<uint32_t>(s)));
  }
  *cursor = s;
  const uint32_t dim = config_.dim;
  const size_t at = values->size();
  values->resize(at + slots.size() * dim);
  if (slots.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(store_->ReadRows(
      slots, dim, absl::MakeSpan(values->data() + at, slots.size() * dim)));
  if (!with_state) return absl::OkStatus();
  state->resize(store_->num_slots());
  for (int q = 0; q < store_->num_slots(); ++q) {
    std::vector<float>& out = (*state)[q];
    const size_t base = out.size();
    out.resize(base + slots.size() * dim);
    RETURN_IF_ERROR(store_->ReadSlotRows(
        q, slots, dim, absl::MakeSpan(out.data() + base, slots.size() * dim)));
  }
  return absl::OkStatus();
}

}  // namespace ps
