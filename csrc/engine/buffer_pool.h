// A pool of large host buffers. Batches of the same size recur every iteration; reusing their
// memory skips the page faults (and kernel zeroing) a fresh multi-megabyte allocation costs.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace penstock {

class BufferPool {
 public:
  explicit BufferPool(size_t max_cached_bytes) : max_cached_(max_cached_bytes) {}
  ~BufferPool();

  // At least `bytes` bytes (size rounded up to the pool's size class), 64-byte aligned.
  void* acquire(size_t bytes, size_t* capacity);
  void release(void* ptr, size_t capacity);

  size_t cached_bytes() const;
  void clear();

  static size_t size_class(size_t bytes);

 private:
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // capacity -> block
  size_t cached_ = 0, max_cached_;
};

// The process-wide pool used for batch outputs.
std::shared_ptr<BufferPool> host_pool();

}  // namespace penstock
