#include "engine/thread_state.h"

#include <Python.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

namespace penstock {
namespace {

// The watched thread state; read under the lock, so that it is never read after its thread has
// unwatched it (and gone on to free it).
std::mutex watched_lock;
PyThreadState* watched = nullptr;

bool holds_gil(PyThreadState* state) {
#if defined(Py_GIL_DISABLED)
  (void)state;
  return false;
#elif PY_VERSION_HEX >= 0x030C0000
  // set once the thread has taken the GIL back, cleared before it gives it away
  return state->_status.active;
#else
  // before 3.12 the thread state of the GIL's holder is one for the process (null while nobody holds it)
  return _PyThreadState_UncheckedGet() == state;
#endif
}

}  // namespace

uintptr_t watch_consumer() {
  PyThreadState* state = PyThreadState_Get();
  std::lock_guard<std::mutex> hold(watched_lock);
  watched = state;
  return reinterpret_cast<uintptr_t>(state);
}

void unwatch_consumer(uintptr_t state) {
  std::lock_guard<std::mutex> hold(watched_lock);
  if (reinterpret_cast<uintptr_t>(watched) == state) watched = nullptr;
}

int consumer_holds_gil() {
  std::lock_guard<std::mutex> hold(watched_lock);
  return watched == nullptr ? -1 : holds_gil(watched) ? 1 : 0;
}

int64_t wait_while_consumer_runs_python(int64_t max_us, int64_t poll_us, int64_t look_us) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::microseconds(max_us);
  const auto poll = std::chrono::microseconds(poll_us > 0 ? poll_us : 1);
  const auto look = std::chrono::microseconds(look_us);
  for (;;) {
    std::this_thread::sleep_for(poll);
    // a look: until the consumer is seen holding the GIL, for at most `look`
    const auto until = std::min(Clock::now() + look, deadline);
    int holds;
    while ((holds = consumer_holds_gil()) == 0 && Clock::now() < until) std::this_thread::yield();
    if (holds <= 0 || Clock::now() >= deadline) break;
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

}  // namespace penstock
