// A fixed pool of worker threads and a batch-level parallel-for.
// The calling thread takes part in the work, so a pool of n threads gives n-way parallelism
// with n-1 workers plus the caller.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace penstock {

class ThreadPool {
 public:
  // Workers named `name` as the OS shows them (top, py-spy, /proc), when given: a pool's CPU time
  // then shows apart from its process's other threads. Workers of a `niceness` above 0 run at a
  // priority that much lower (engine/thread_priority.h); the calling thread keeps its own.
  explicit ThreadPool(int num_threads, const std::string& name = {}, int niceness = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(i) for every i in [0, n); items are handed out one at a time (samples differ in
  // cost), so fast threads take more. Rethrows the first exception after every item is done
  // or skipped. Must not be called from inside fn.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

  // Splits [0, total) into contiguous chunks of at least `grain` items: fn(begin, end).
  void parallel_range(int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // The threads and the job they share, defined in thread_pool.cpp: every kernel file includes
  // this header, and <thread> and <condition_variable> would cost each a third of a second.
  struct Workers;
  int num_threads_;
  std::unique_ptr<Workers> workers_;
};

}  // namespace penstock
