// A pool of large host buffers. Batches of the same size recur every iteration; reusing their
// memory skips the page faults (and kernel zeroing) a fresh multi-megabyte allocation costs.
//
// Blocks that stop being reused are freed: one cached while `idle_acquires` later blocks were
// handed out goes back to the system. Without that, batches of varying sizes (random crops,
// images of many sizes) leave a block of every size class they ever hit, and the cache creeps up
// to its byte cap over hours (a soak's resident memory rose for an hour).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>

namespace penstock {

class BufferPool {
 public:
  BufferPool(size_t max_cached_bytes, uint64_t idle_acquires)
      : max_cached_(max_cached_bytes), idle_acquires_(idle_acquires) {}
  ~BufferPool();

  // At least `bytes` bytes, 64-byte aligned: a cached block of the smallest size class that fits,
  // at most a quarter larger than `bytes`' class, else a new block of that class.
  void* acquire(size_t bytes, size_t* capacity);
  void release(void* ptr, size_t capacity);

  size_t cached_bytes() const;
  size_t cached_blocks() const;
  void clear();

  static size_t size_class(size_t bytes);

 private:
  struct Cached {
    void* ptr;
    size_t capacity;
    uint64_t released_at;  // acquires_ when it was released
  };
  // Frees the least recently released blocks while they have been idle too long or the cache is
  // over its cap. Called with mutex_ held.
  void evict_locked();

  mutable std::mutex mutex_;
  std::list<Cached> by_age_;  // oldest release first
  std::multimap<size_t, std::list<Cached>::iterator> by_size_;
  size_t cached_ = 0, max_cached_;
  uint64_t acquires_ = 0, idle_acquires_;
};

// The process-wide pool used for batch outputs.
std::shared_ptr<BufferPool> host_pool();

}  // namespace penstock
