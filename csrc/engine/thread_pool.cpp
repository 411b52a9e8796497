#include "engine/thread_pool.h"

#include <algorithm>

namespace penstock {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_items() {
  for (;;) {
    int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= job_size_) return;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (error_) continue;  // skip the rest once something failed
    }
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    run_items();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  if (n == 1 || workers_.empty()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    next_.store(0);
    error_ = nullptr;
    ++generation_;
  }
  work_cv_.notify_all();
  run_items();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Workers that woke late find no items left and leave at once; wait for all that joined.
    done_cv_.wait(lock, [&] { return active_ == 0 && next_.load() >= job_size_; });
    job_ = nullptr;
  }
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::parallel_range(int64_t total, int64_t grain,
                                const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>((total + grain - 1) / grain, int64_t(num_threads_) * 4);
  chunks = std::max<int64_t>(1, chunks);
  if (chunks == 1) {  // small work: not worth waking the workers
    fn(0, total);
    return;
  }
  int64_t step = (total + chunks - 1) / chunks;
  parallel_for(chunks, [&](int64_t c) {
    int64_t b = c * step, e = std::min(total, b + step);
    if (b < e) fn(b, e);
  });
}

}  // namespace penstock
