// Admission policies of sparse tables (TableConfig::admission): whether an
// id that has no stored row gets one. One implementation per mode, chosen
// once when the table is created (CreateAdmissionPolicy):
//   - AdmitAll (no admission settings): every id at its first pull or push;
//   - count filter (min_count N >= 2, optionally with probability p < 1):
//     the push that brings an id's push count to N admits it (with p: from
//     then on each push admits it with probability p); pulls do not count;
//   - probability (p < 1, no count): each push admits with probability p.
// Until an id is admitted, pulls return the initializer's values and store
// nothing, and pushes only count; only AdmitAll creates rows on pulls.
//
// Counts are exact (one hash-map entry per counted id, PendingBytes()); an
// admitted id's count is dropped, so an evicted id is counted from 0 again.
// A probability draw is a hash of (table seed, shard, id, the push's key),
// not a generator's next number: the same push draws the same on every
// replica of a shard and after a restore, whatever came before it.
//
// Decisions are two-phase so a request that fails later (a memory cap)
// leaves no trace: WouldAdmit decides without changing counts, Record
// commits the decision.
//
// Thread safety: none; the owning table serializes calls.
#ifndef PS_SERVER_ROWS_ADMISSION_H_
#define PS_SERVER_ROWS_ADMISSION_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/table_config.h"

namespace ps {

class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;

  // Whether a pull of an id without a row creates it.
  virtual bool CreatesOnPull() const = 0;
  // Whether a push of `id` (no row) admits it now. Does not count it.
  // `push_key` tells pushes apart for the probability draw (the number of
  // pushes the table executed before this one: different for each push of
  // a table, equal on every replica, kept by checkpoints).
  virtual bool WouldAdmit(uint64_t id, uint64_t push_key) = 0;
  // Commits a push of `id` decided by WouldAdmit: counts it, or forgets its
  // count when `admitted`.
  virtual void Record(uint64_t id, bool admitted) = 0;

  // Ids counted but not admitted, and the bytes their counts take.
  virtual uint64_t pending() const { return 0; }
  virtual uint64_t PendingBytes() const { return 0; }

  // Checkpoints: the counts, (id, pushes so far) sorted by id. Import
  // replaces them: INVALID_ARGUMENT for a count of 0, or (count filter
  // without probability) >= min_count; a policy that keeps no counts
  // ignores them (the table's admission was changed).
  virtual std::vector<std::pair<uint64_t, uint32_t>> ExportCounts() const {
    return {};
  }
  virtual absl::Status ImportCounts(
      const std::vector<std::pair<uint64_t, uint32_t>>& counts);
};

// The policy of `config` for shard `shard`; `seed` seeds the probability
// draws (with the shard index, so shards draw independently).
std::unique_ptr<AdmissionPolicy> CreateAdmissionPolicy(
    const AdmissionConfig& config, uint64_t seed, uint32_t shard);

}  // namespace ps

#endif  // PS_SERVER_ROWS_ADMISSION_H_
