// The speech feature kernels (audio_features.cpp), each a batch per call.
#pragma once
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

void audio_resample(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets, Array dst,
                    int dst_type, I64Array dst_shapes, I64Array dst_offsets, ArrayOf<double, true> in_rates,
                    ArrayOf<double, true> out_rates, double quality);
void preemphasis(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets, Array dst,
                 int dst_type, I64Array dst_offsets, ArrayOf<float, true> coeffs, int border);
void spectrogram(ThreadPool& pool, Array src, I64Array lengths, I64Array src_offsets, Array dst, I64Array dst_shapes,
                 I64Array dst_offsets, ArrayOf<double, true> window, int64_t nfft, int64_t step, bool centered,
                 bool reflect, int power_kind, bool freq_major);
void power_spectrum(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                    I64Array dst_offsets, I64Array nffts, int power_kind);
void matrix_along_axis(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                       I64Array dst_offsets, std::vector<ArrayOf<double, true>> matrices, I64Array which);
void to_decibels(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                 I64Array dst_offsets, double multiplier, ArrayOf<float, true> refs, double floor_ratio);
// (begin, length) of each sample's non-silent region
std::tuple<ArrayOf<int32_t>, ArrayOf<int32_t>> nonsilent_region(ThreadPool& pool, Array src, int src_type,
                                                                 I64Array lengths, I64Array src_offsets,
                                                                 double cutoff_db, int64_t window_length,
                                                                 double reference_power);

}  // namespace penstock
