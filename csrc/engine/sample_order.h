// The order a reader hands its samples out in (core/penstock/operators/_reader.py says the rules):
// the endless read order of one shard and the shuffle buffer samples are picked from, batch by
// batch in one call. The draws are libstdc++'s (DALI's loaders are built with it): std::mt19937
// with std::shuffle for list orders, minstd_rand0 with uniform_int_distribution<int> for picks,
// written out here so that any standard library gives the same samples.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// std::shuffle(items, std::mt19937(seed)) as libstdc++ does it
void std_shuffle(std::vector<int64_t>& items, uint32_t seed);

// uniform_int_distribution<int>(0, k - 1) over minstd_rand0 (its state advanced), as libstdc++ does it
int64_t minstd_below(uint64_t& state, int64_t k);

class SampleOrder {
 public:
  // `order`: the list order read (empty: as scanned); `reshuffle_seed`: shuffle_after_epoch's seed
  // (each pass then reads the previous pass's order shuffled with seed + epoch); `rng_state`:
  // minstd_rand0's state after its seeding (random_shuffle), 0 for no shuffling.
  SampleOrder(int64_t n, int64_t num_shards, int64_t shard_id, bool stick, std::vector<int64_t> order,
              std::optional<uint32_t> reshuffle_seed, int64_t fill, uint64_t rng_state, bool pad);

  I64Array next_batch(int64_t batch);

  // Hands `indices` out first (picked as a pass is), as pass `pass_index`; then reads the shard
  // from its beginning as a new reader does (an elastic restore's rest of an epoch).
  void start_with(std::vector<int64_t> indices, int64_t pass_index, int64_t pad_to);

  const int64_t n, num_shards, fill;
  const bool stick, pad;
  const std::optional<uint32_t> reshuffle_seed;
  // the read order of the shard
  int64_t shard, pass_shard, pos = 0, read_in_pass = 0, epoch = 1;
  std::vector<int64_t> order;  // empty: as scanned
  uint64_t order_version = 0;  // counts the changes of `order` (a checkpoint encodes each once)
  // the buffer samples are picked from: counters [first, end) of each pass in it
  std::vector<int64_t> buffer;
  std::deque<std::pair<int64_t, int64_t>> passes;
  uint64_t rng_state;  // 0: no shuffling
  int64_t returned = 0, last = -1, pass_index = 0;
  // an elastic restore's samples, handed out before reading
  std::optional<std::vector<int64_t>> prelude;
  int64_t prelude_pos = 0, prelude_pad_to = 0;

  void set_order(std::vector<int64_t> new_order) {
    order = std::move(new_order);
    ++order_version;
  }

 private:
  int64_t shard_begin(int64_t s) const { return s * n / num_shards; }
  std::pair<int64_t, bool> read();
  std::pair<int64_t, int64_t> push();
  std::optional<int64_t> from_prelude(bool new_batch);
  // At a pass's end: true (the last sample again) while pad_last_batch pads it to whole batches and
  // `pad_to` samples, else the pass ends (false)
  bool pads_or_ends_pass(int64_t pad_to, bool new_batch);
  int64_t one(bool new_batch);
  int64_t below(int64_t k) { return minstd_below(rng_state, k); }
};

}  // namespace penstock
