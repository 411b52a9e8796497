// The thread that consumes a GPU pipeline's batches, watched by the pipeline's threads so that they can
// let it run its Python first (core/penstock/_consumer.py says why).
#pragma once
#include <cstdint>

namespace penstock {

// Watches the calling thread, which holds the GIL, as the consumer (in place of any other); returns
// its Python thread state's address, which unwatch_consumer takes.
uintptr_t watch_consumer();

// Stops watching the thread of thread state `state` if it is the one watched: called as that thread
// ends, before its thread state goes.
void unwatch_consumer(uintptr_t state);

// 1 when the watched consumer holds the GIL now, 0 when not, -1 when no thread is watched. Always 0
// on a Python without a GIL.
int consumer_holds_gil();

// Sleeps `poll_us` at a time while the watched consumer runs Python: while, after each sleep, it is
// seen holding the GIL within `look_us` of looking (a forward pass gives it away around each
// operator's native part, for tens of microseconds). At most `max_us` in all; the microseconds
// waited. The first sleep comes before the first look, so a consumer that was waiting for the GIL
// the caller held can take it and show that it runs Python.
int64_t wait_while_consumer_runs_python(int64_t max_us, int64_t poll_us, int64_t look_us);

}  // namespace penstock
