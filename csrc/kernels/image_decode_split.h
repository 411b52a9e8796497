// host_share_choose (image_decode_split.cpp): which of a batch's JPEGs the host decodes beside the
// GPU decoder (operators/_image_decode_split.py says how the split is made). Per-batch planning of
// microseconds: it runs with the GIL held, where numpy's sort and scans would give the GIL away.
#pragma once
#include <utility>

#include "engine/kernel.h"

namespace penstock {

// gpu_bytes, host_costs [N]: per sample the GPU's work (encoded bytes) and the host's (cost units);
// host_already: the cost of what the host decodes anyway. Returns a mask [N] of the samples for the
// host, and whether the cap was lifted: in order of host cost per GPU byte (stable), as many as make
// the expected finish of the two sides, max(host time, GPU time) at the rates given, earliest (the
// fewest among equals), among those of a ratio up to max_ratio; among all of them instead when that
// finishes at least open_gain (a fraction) of the capped split's time earlier.
std::pair<ArrayOf<bool>, bool> host_share_choose(const ArrayOf<double, true>& gpu_bytes,
                                                 const ArrayOf<double, true>& host_costs, double host_already,
                                                 double host_rate, double gpu_rate, double max_ratio,
                                                 double open_gain);

}  // namespace penstock
