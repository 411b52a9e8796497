#include "engine/sample_order.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>

namespace penstock {
namespace {

constexpr uint64_t kMinstdModulus = 2147483647;

// uniform_int_distribution(lo, hi) over a full 32-bit engine: libstdc++ scales with one 64-bit
// multiplication and rejects the few low products that would bias it
uint64_t uniform_32(std::mt19937& g, uint64_t lo, uint64_t hi) {
  const uint64_t span = hi - lo + 1;
  uint64_t product = uint64_t(g()) * span;
  if ((product & 0xFFFFFFFFu) < span) {
    const uint64_t threshold = ((0x100000000ull - span) & 0xFFFFFFFFu) % span;
    while ((product & 0xFFFFFFFFu) < threshold) product = uint64_t(g()) * span;
  }
  return lo + (product >> 32);
}

}  // namespace

void std_shuffle(std::vector<int64_t>& a, uint32_t seed) {
  const uint64_t n = a.size();
  if (n < 2) return;
  std::mt19937 g(seed);  // the engine is the standard's, bit for bit; the shuffle is libstdc++'s
  if (0xFFFFFFFFull / n >= n) {  // two swap positions from one draw
    uint64_t i = 1;
    if (n % 2 == 0) {  // an odd count of swaps: the first one alone
      std::swap(a[1], a[uniform_32(g, 0, 1)]);
      i = 2;
    }
    for (; i < n; i += 2) {
      const uint64_t span = i + 1, x = uniform_32(g, 0, span * (span + 1) - 1);
      std::swap(a[i], a[x / (span + 1)]);
      std::swap(a[i + 1], a[x % (span + 1)]);
    }
    return;
  }
  for (uint64_t i = 1; i < n; ++i) std::swap(a[i], a[uniform_32(g, 0, i)]);
}

int64_t minstd_below(uint64_t& state, int64_t k) {
  // the engine's values 1..2^31-2 cut into k equal buckets, rejecting the remainder at the top
  const uint64_t scaling = (kMinstdModulus - 2) / uint64_t(k), past = uint64_t(k) * scaling;
  while (true) {
    state = state * 16807 % kMinstdModulus;
    const uint64_t r = state - 1;
    if (r < past) return int64_t(r / scaling);
  }
}

SampleOrder::SampleOrder(int64_t n, int64_t num_shards, int64_t shard_id, bool stick, std::vector<int64_t> order,
                         std::optional<uint32_t> reshuffle_seed, int64_t fill, uint64_t rng_state, bool pad)
    : n(n), num_shards(num_shards), fill(rng_state ? std::max<int64_t>(1, fill) : 1), stick(stick), pad(pad),
      reshuffle_seed(reshuffle_seed), shard(shard_id), pass_shard(shard_id), order(std::move(order)),
      rng_state(rng_state) {
  if (n < 1 || num_shards < 1 || shard_id < 0 || shard_id >= num_shards)
    throw std::invalid_argument("SampleOrder: needs n >= 1 samples and 0 <= shard_id < num_shards");
  if (!this->order.empty() && int64_t(this->order.size()) != n)
    throw std::invalid_argument("SampleOrder: the list order must hold n indices");
  pos = shard_begin(shard_id);
  if (reshuffle_seed) {
    if (this->order.empty())
      for (int64_t i = 0; i < n; ++i) this->order.push_back(i);
    std_shuffle(this->order, *reshuffle_seed + uint32_t(epoch));
  }
}

std::pair<int64_t, bool> SampleOrder::read() {
  const int64_t index = order.empty() ? pos : order[pos];
  ++pos;
  if (pos >= n || (stick && shard + 1 < num_shards && pos >= shard_begin(shard + 1))) {
    pos = stick ? shard_begin(shard) : 0;
    ++epoch;
    if (reshuffle_seed) {
      std_shuffle(order, *reshuffle_seed + uint32_t(epoch));
      ++order_version;
    }
  }
  ++read_in_pass;
  const bool new_pass = read_in_pass - 1 >= shard_begin(pass_shard + 1) - shard_begin(pass_shard);
  if (new_pass) {
    if (!stick) pass_shard = (pass_shard + 1) % num_shards;
    read_in_pass = 1;
  }
  return {index, new_pass};
}

std::pair<int64_t, int64_t> SampleOrder::push() {
  const auto [index, new_pass] = read();
  if (new_pass) {
    const int64_t end = passes.back().second;
    passes.emplace_back(end, end);
  }
  return {index, passes.back().second++};
}

std::optional<int64_t> SampleOrder::from_prelude(bool new_batch) {
  auto& samples = *prelude;
  const int64_t left = int64_t(samples.size()) - prelude_pos;
  if (left) {
    const int64_t pick = prelude_pos + (rng_state ? below(left) : 0);
    std::swap(samples[prelude_pos], samples[pick]);
    last = samples[prelude_pos++];
    ++returned;
    return last;
  }
  if (pads_or_ends_pass(prelude_pad_to, new_batch)) return last;
  prelude.reset();
  return std::nullopt;
}

bool SampleOrder::pads_or_ends_pass(int64_t pad_to, bool new_batch) {
  if (pad && (returned < pad_to || !new_batch)) {  // the last sample again, to whole batches of pad_to
    ++returned;
    return true;
  }
  returned = 0;
  ++pass_index;
  return false;
}

int64_t SampleOrder::one(bool new_batch) {
  if (prelude) {
    if (auto index = from_prelude(new_batch)) return *index;
  }
  if (buffer.empty()) {
    passes.emplace_back(0, 0);
    for (int64_t i = 0; i < fill; ++i) buffer.push_back(push().first);
  }
  if (passes.front().first == passes.front().second) {
    const int64_t pad_to = (n + num_shards - 1) / num_shards;  // what every shard gives before padding stops
    if (pads_or_ends_pass(pad_to, new_batch)) return last;
    passes.pop_front();
  }
  auto& front = passes.front();
  const int64_t size = int64_t(buffer.size());
  const int64_t offset = rng_state ? below(front.second - front.first) : 0;
  const int64_t first = front.first % size, pick = (front.first + offset) % size;
  std::swap(buffer[pick], buffer[first]);
  last = buffer[first];
  const auto [index, slot] = push();
  buffer[slot % size] = index;  // the slot just emptied: the buffer is always full
  ++front.first;
  ++returned;
  return last;
}

I64Array SampleOrder::next_batch(int64_t batch) {
  I64Array out = I64Array::empty({batch});
  int64_t* indices = out.mutable_data();
  for (int64_t k = 0; k < batch; ++k) indices[k] = one(k == 0);
  return out;
}

void SampleOrder::start_with(std::vector<int64_t> indices, int64_t index_of_pass, int64_t pad_to) {
  pass_index = index_of_pass;
  if (!indices.empty()) {
    prelude = std::move(indices);
    prelude_pos = 0;
    prelude_pad_to = pad_to;
  }
}

}  // namespace penstock
