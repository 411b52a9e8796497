#include "engine/thread_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace penstock {

bool thread_running(int64_t tid) {
#ifdef __linux__
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%lld/stat", static_cast<long long>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "tid (comm) S ...": the name may hold spaces and parentheses, the state follows the last ')'
  const char* end = std::strrchr(buf, ')');
  return end != nullptr && end[1] == ' ' && end[2] == 'R';
#else
  (void)tid;
  return false;
#endif
}

int64_t wait_while_running(int64_t tid, int64_t max_us, int64_t poll_us) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::microseconds(max_us);
  const auto poll = std::chrono::microseconds(poll_us > 0 ? poll_us : 1);
  do {
    std::this_thread::sleep_for(poll);
  } while (Clock::now() < deadline && thread_running(tid));
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

}  // namespace penstock
