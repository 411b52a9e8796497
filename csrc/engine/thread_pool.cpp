#include "engine/thread_pool.h"

#include "engine/thread_priority.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <vector>

namespace penstock {

struct ThreadPool::Workers {
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  std::mutex call_mutex;  // one parallel_for at a time
  // current job
  const std::function<void(int64_t)>* job = nullptr;
  int64_t job_size = 0;
  std::atomic<int64_t> next{0};
  int active = 0;
  int started = 0;  // workers running, at their priority
  uint64_t generation = 0;
  bool stop = false;
  std::exception_ptr error;
  std::mutex error_mutex;

  void run_items() {
    for (;;) {
      int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= job_size) return;
      {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error) continue;  // skip the rest once something failed
      }
      try {
        (*job)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        work_cv.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        ++active;
      }
      run_items();
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (--active == 0) done_cv.notify_all();
      }
    }
  }
};

ThreadPool::ThreadPool(int num_threads, const std::string& name, int niceness)
    : num_threads_(std::max(1, num_threads)), workers_(new Workers) {
  for (int i = 1; i < num_threads_; ++i) {
    workers_->threads.emplace_back([w = workers_.get(), niceness] {
      lower_calling_thread_priority(niceness);
      {
        std::lock_guard<std::mutex> lock(w->mutex);
        ++w->started;
      }
      w->done_cv.notify_all();
      w->worker_loop();
    });
    if (!name.empty()) pthread_setname_np(workers_->threads.back().native_handle(), name.substr(0, 15).c_str());
  }
  // every worker at its priority before the pool is used
  std::unique_lock<std::mutex> lock(workers_->mutex);
  workers_->done_cv.wait(lock, [&] { return workers_->started == num_threads_ - 1; });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(workers_->mutex);
    workers_->stop = true;
  }
  workers_->work_cv.notify_all();
  for (auto& t : workers_->threads) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  Workers& w = *workers_;
  std::lock_guard<std::mutex> call_lock(w.call_mutex);
  if (n == 1 || w.threads.empty()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    w.job = &fn;
    w.job_size = n;
    w.next.store(0);
    w.error = nullptr;
    ++w.generation;
  }
  w.work_cv.notify_all();
  w.run_items();
  {
    std::unique_lock<std::mutex> lock(w.mutex);
    // Workers that woke late find no items left and leave at once; wait for all that joined.
    w.done_cv.wait(lock, [&] { return w.active == 0 && w.next.load() >= w.job_size; });
    w.job = nullptr;
  }
  if (w.error) std::rethrow_exception(w.error);
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
