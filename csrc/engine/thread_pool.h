// A fixed pool of worker threads and a batch-level parallel-for.
// The calling thread takes part in the work, so a pool of n threads gives n-way parallelism
// with n-1 workers plus the caller.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace penstock {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
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
  void worker_loop();
  void run_items();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::mutex call_mutex_;  // one parallel_for at a time
  // current job
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t job_size_ = 0;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::mutex error_mutex_;
};

}  // namespace penstock
