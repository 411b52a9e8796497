// PENSTOCK_HOT_LOOP: a function whose loops are compiled twice (AVX2 and baseline x86-64), the
// build for the running CPU picked at load time.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PENSTOCK_HOT_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define PENSTOCK_HOT_LOOP
#endif
