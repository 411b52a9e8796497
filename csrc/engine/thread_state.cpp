#include "engine/thread_state.h"

#include <Python.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace penstock {
namespace {

// The watched thread state. Its thread frees it as it ends, after unwatching it: unwatching waits
// for the looks that may have read it before (`readers`), so none reads it once it is freed. Looks
// take no lock: a fork while one of them runs leaves the child no lock held by a thread it lacks.
std::atomic<PyThreadState*> watched{nullptr};
std::atomic<int> readers{0};

// In a forked child the other threads are gone, their thread states freed by Python as it starts
// over, and with them any look a parent's thread was making.
void forget_in_child() {
  watched.store(nullptr);
  readers.store(0);
}
const int forget_registered = pthread_atfork(nullptr, nullptr, forget_in_child);

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
  watched.store(state);
  return reinterpret_cast<uintptr_t>(state);
}

void unwatch_consumer(uintptr_t state) {
  PyThreadState* expected = reinterpret_cast<PyThreadState*>(state);
  watched.compare_exchange_strong(expected, nullptr);
  // also when another thread was watched since: a look may have read this state before that
  while (readers.load() != 0) std::this_thread::yield();
}

int consumer_holds_gil() {
  readers.fetch_add(1);
  PyThreadState* state = watched.load();
  const int holds = state == nullptr ? -1 : holds_gil(state) ? 1 : 0;
  readers.fetch_sub(1);
  return holds;
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
