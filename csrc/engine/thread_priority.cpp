#include "engine/thread_priority.h"

#include <algorithm>

#ifdef __linux__
#include <cerrno>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace penstock {

#ifdef __linux__
void lower_calling_thread_priority(int niceness) {
  if (niceness <= 0) return;
  // Linux's getpriority and setpriority take a thread's id for PRIO_PROCESS and mean that thread alone
  const auto thread = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, thread);
  if (errno == 0) setpriority(PRIO_PROCESS, thread, std::min(19, current + niceness));
}
#else
void lower_calling_thread_priority(int) {}
#endif

}  // namespace penstock
