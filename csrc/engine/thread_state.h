// Whether another thread of this process is on a CPU, and waiting while it is: how a GPU
// pipeline's threads let the thread that consumes its batches run its Python first
// (core/penstock/_consumer.py says why).
#pragma once
#include <cstdint>

namespace penstock {

// True while thread `tid` (a Linux thread id) of this process is running or runnable; false while
// it sleeps or waits (a lock, a condition, I/O, the GIL) and when there is no such thread.
bool thread_running(int64_t tid);

// Sleeps `poll_us`, then on while thread `tid` runs, polling every `poll_us`, for at most `max_us`
// in all: the microseconds waited. (The first sleep lets a thread that was waiting for what the
// caller held, the GIL, take it and show it runs.)
int64_t wait_while_running(int64_t tid, int64_t max_us, int64_t poll_us);

}  // namespace penstock
