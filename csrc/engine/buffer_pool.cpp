#include "engine/buffer_pool.h"

#include <cstdlib>
#include <new>

namespace penstock {

size_t BufferPool::size_class(size_t bytes) {
  // Eight classes per power of two: at most 12.5% over-allocation.
  size_t top = 1;
  while ((top << 1) <= bytes) top <<= 1;
  size_t step = top >= 8 ? top / 8 : 1;
  return (bytes + step - 1) / step * step;
}

BufferPool::~BufferPool() { clear(); }

void* BufferPool::acquire(size_t bytes, size_t* capacity) {
  size_t want = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(want);
    if (it != free_.end()) {
      void* p = it->second;
      cached_ -= it->first;
      free_.erase(it);
      *capacity = want;
      return p;
    }
  }
  void* p = std::aligned_alloc(64, (want + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  *capacity = want;
  return p;
}

void BufferPool::release(void* ptr, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(capacity, ptr);
  cached_ += capacity;
  // Over the cap: give back the largest cached blocks first (the rarest sizes to reuse).
  while (cached_ > max_cached_ && !free_.empty()) {
    auto last = std::prev(free_.end());
    cached_ -= last->first;
    std::free(last->second);
    free_.erase(last);
  }
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

void BufferPool::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, p] : free_) std::free(p);
  free_.clear();
  cached_ = 0;
}

std::shared_ptr<BufferPool> host_pool() {
  static auto pool = std::make_shared<BufferPool>(size_t(512) << 20);
  return pool;
}

}  // namespace penstock
