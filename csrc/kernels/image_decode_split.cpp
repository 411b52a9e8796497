#include "kernels/image_decode_split.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

namespace penstock {

std::pair<ArrayOf<bool>, bool> host_share_choose(const ArrayOf<double, true>& gpu_bytes,
                                                 const ArrayOf<double, true>& host_costs, double host_already,
                                                 double host_rate, double gpu_rate, double max_ratio,
                                                 double open_gain) {
  if (gpu_bytes.ndim() != 1 || host_costs.ndim() != 1 || gpu_bytes.shape(0) != host_costs.shape(0))
    throw std::invalid_argument("host_share_choose: gpu_bytes and host_costs must be [N], alike");
  const int64_t n = gpu_bytes.shape(0);
  const double* bytes = gpu_bytes.data();
  const double* costs = host_costs.data();
  std::vector<double> ratio(n);
  for (int64_t i = 0; i < n; ++i) ratio[i] = costs[i] / std::max(bytes[i], 1.0);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ratio[a] < ratio[b]; });
  int64_t qualifying = 0;
  for (int64_t i = 0; i < n; ++i) qualifying += ratio[i] <= max_ratio;
  // k = 0..n samples (the first k in that order) for the host: each side's expected time; the best k
  // among the qualifying ones, and the best of all
  double gpu_total = 0.0, host_taken = 0.0, gpu_taken = 0.0, best_capped = 0.0, best_any = 0.0;
  for (int64_t i = 0; i < n; ++i) gpu_total += bytes[i];
  int64_t capped_k = 0, any_k = 0;
  for (int64_t k = 0; k <= n; ++k) {
    if (k > 0) host_taken += costs[order[k - 1]], gpu_taken += bytes[order[k - 1]];
    const double finish =
        std::max((host_already + host_taken) / host_rate, std::max(gpu_total - gpu_taken, 0.0) / gpu_rate);
    if (k <= qualifying && (k == 0 || finish < best_capped)) best_capped = finish, capped_k = k;
    if (k == 0 || finish < best_any) best_any = finish, any_k = k;
  }
  const bool open = any_k > capped_k && best_any <= (1.0 - open_gain) * best_capped;
  const int64_t chosen_k = open ? any_k : capped_k;
  auto mask = ArrayOf<bool>::empty({n});
  bool* chosen = mask.mutable_data();
  std::fill(chosen, chosen + n, false);
  for (int64_t k = 0; k < chosen_k; ++k) chosen[order[k]] = true;
  return {std::move(mask), open};
}

}  // namespace penstock
