// Whether another thread of this process is on a CPU, and waiting while it is: how a GPU
// pipeline's threads can let the thread that consumes its batches run its Python first
// (core/penstock/_consumer.py says why).
#pragma once
#include <cstdint>

namespace penstock {

// The CPU time thread `tid` (a Linux thread id) of this process has used, in nanoseconds; -1 when
// there is no such thread.
int64_t thread_cpu_ns(int64_t tid);

// Sleeps `poll_us` at a time while thread `tid` ran for at least half of the last sleep, for at
// most `max_us` in all: the microseconds waited. The first sleep comes before the first look, so a
// thread that was waiting for what the caller held (the GIL) can take it and show that it runs.
int64_t wait_while_running(int64_t tid, int64_t max_us, int64_t poll_us);

}  // namespace penstock
