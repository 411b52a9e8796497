#include "engine/thread_state.h"

#include <time.h>

#include <chrono>
#include <thread>

namespace penstock {

int64_t thread_cpu_ns(int64_t tid) {
#ifdef __linux__
  // the clock glibc's pthread_getcpuclockid names for a thread: its id, inverted, shifted, and the
  // per-thread scheduler clock's bits; clock_gettime refuses it for a thread that has ended
  const clockid_t clock = static_cast<clockid_t>((~static_cast<uint32_t>(tid) << 3) | 6u);
  timespec ts{};
  if (tid <= 0 || clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#else
  (void)tid;
  return -1;
#endif
}

int64_t wait_while_running(int64_t tid, int64_t max_us, int64_t poll_us) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::microseconds(max_us);
  const auto poll = std::chrono::microseconds(poll_us > 0 ? poll_us : 1);
  int64_t used = thread_cpu_ns(tid);
  while (used >= 0) {
    const auto before = Clock::now();
    std::this_thread::sleep_for(poll);
    const auto after = Clock::now();
    const int64_t now_used = thread_cpu_ns(tid);
    const int64_t slept_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count();
    if (now_used < 0 || (now_used - used) * 2 < slept_ns || after >= deadline) break;
    used = now_used;
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

}  // namespace penstock
