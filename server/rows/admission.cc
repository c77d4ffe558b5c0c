#include "server/rows/admission.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace ps {
namespace {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijection of 64-bit
// words whose outputs pass BigCrush for consecutive inputs. Written here
// because the draw must be the same in every process and build, which
// absl::Hash (salted per process) and std::hash (unspecified) do not
// promise.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A draw in [0, 1) against p, a function of (seed, shard, id, push_key).
class Coin {
 public:
  Coin(float p, uint64_t seed, uint32_t shard)
      : p_(p), key_(Mix(seed * 0x9E3779B97F4A7C15ull + shard)) {}
  bool Flip(uint64_t id, uint64_t push_key) const {
    if (p_ >= 1.0f) return true;
    const uint64_t draw = Mix(Mix(key_ ^ id) ^ push_key);
    return static_cast<double>(draw >> 11) * 0x1.0p-53 < p_;
  }

 private:
  const float p_;
  const uint64_t key_;
};

class AdmitAll final : public AdmissionPolicy {
 public:
  bool CreatesOnPull() const override { return true; }
  bool WouldAdmit(uint64_t, uint64_t) override { return true; }
  void Record(uint64_t, bool) override {}
};

class ProbabilityAdmission final : public AdmissionPolicy {
 public:
  ProbabilityAdmission(float p, uint64_t seed, uint32_t shard)
      : coin_(p, seed, shard) {}
  bool CreatesOnPull() const override { return false; }
  bool WouldAdmit(uint64_t id, uint64_t push_key) override {
    return coin_.Flip(id, push_key);
  }
  void Record(uint64_t, bool) override {}

 private:
  const Coin coin_;
};

class CountAdmission final : public AdmissionPolicy {
 public:
  CountAdmission(uint32_t min_count, float p, uint64_t seed, uint32_t shard)
      : min_count_(min_count), counts_only_(p >= 1.0f), coin_(p, seed, shard) {}

  bool CreatesOnPull() const override { return false; }

  bool WouldAdmit(uint64_t id, uint64_t push_key) override {
    auto it = counts_.find(id);
    const uint64_t seen = it == counts_.end() ? 0 : it->second;
    return seen + 1 >= min_count_ && coin_.Flip(id, push_key);
  }

  void Record(uint64_t id, bool admitted) override {
    if (admitted) {
      counts_.erase(id);
      return;
    }
    uint32_t& count = counts_[id];
    if (count < UINT32_MAX) ++count;
  }

  uint64_t pending() const override { return counts_.size(); }
  // absl's flat_hash_map: a (uint64, uint32) slot of 16 bytes plus one
  // control byte per capacity slot.
  uint64_t PendingBytes() const override {
    return counts_.capacity() * (sizeof(std::pair<uint64_t, uint32_t>) + 1);
  }

  std::vector<std::pair<uint64_t, uint32_t>> ExportCounts() const override {
    std::vector<std::pair<uint64_t, uint32_t>> out(counts_.begin(),
                                                   counts_.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  absl::Status ImportCounts(
      const std::vector<std::pair<uint64_t, uint32_t>>& counts) override {
    counts_.clear();
    counts_.reserve(counts.size());
    for (const auto& [id, count] : counts) {
      // With a probability a count may pass min_count while not admitted.
      if (count == 0 || (counts_only_ && count >= min_count_)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "admission count ", count, " of id ", id,
            " is outside [1, min_count = ", min_count_, ")"));
      }
      counts_[id] = count;
    }
    return absl::OkStatus();
  }

 private:
  const uint32_t min_count_;
  const bool counts_only_;  // no probability: admitted exactly at min_count
  const Coin coin_;
  absl::flat_hash_map<uint64_t, uint32_t> counts_;
};

}  // namespace

absl::Status AdmissionPolicy::ImportCounts(
    const std::vector<std::pair<uint64_t, uint32_t>>&) {
  return absl::OkStatus();
}

std::unique_ptr<AdmissionPolicy> CreateAdmissionPolicy(
    const AdmissionConfig& config, uint64_t seed, uint32_t shard) {
  if (config.min_count >= 2) {
    return std::make_unique<CountAdmission>(config.min_count,
                                            config.probability, seed, shard);
  }
  if (config.probability < 1.0f) {
    return std::make_unique<ProbabilityAdmission>(config.probability, seed,
                                                  shard);
  }
  return std::make_unique<AdmitAll>();
}

}  // namespace ps
