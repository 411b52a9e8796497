#include "engine/buffer_pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace penstock {
namespace {

// Blocks this large are mapped from the system and unmapped when freed, bypassing malloc: glibc
// raises its mmap threshold to the size of every mapped chunk freed (up to 32 MiB), after which
// blocks of that size come from its heaps and the heaps fragment (a soak's heaps grew while the
// pool's own bytes stayed flat). Smaller ones stay below glibc's first threshold, never mapped by it.
constexpr size_t kMappedBytes = size_t(64) << 10;

void* allocate(size_t capacity) {
  if (capacity >= kMappedBytes) {
    void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;  // page-aligned
  }
  void* p = std::aligned_alloc(64, (capacity + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}

void deallocate(void* p, size_t capacity) {
  if (capacity >= kMappedBytes)
    munmap(p, capacity);
  else
    std::free(p);
}

}  // namespace

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
    ++acquires_;
    auto fit = by_size_.lower_bound(want);
    if (fit != by_size_.end() && fit->first <= want + want / 4) {
      auto cached = fit->second;
      void* p = cached->ptr;
      *capacity = cached->capacity;
      cached_ -= cached->capacity;
      by_size_.erase(fit);
      by_age_.erase(cached);
      evict_locked();
      return p;
    }
    evict_locked();
  }
  void* p = allocate(want);
  *capacity = want;
  return p;
}

void BufferPool::release(void* ptr, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto cached = by_age_.insert(by_age_.end(), Cached{ptr, capacity, acquires_});
  by_size_.emplace(capacity, cached);
  cached_ += capacity;
  evict_locked();
}

void BufferPool::evict_locked() {
  while (!by_age_.empty() &&
         (cached_ > max_cached_ || acquires_ - by_age_.front().released_at > idle_acquires_)) {
    const Cached& oldest = by_age_.front();
    auto [first, last] = by_size_.equal_range(oldest.capacity);
    for (auto it = first; it != last; ++it)
      if (it->second == by_age_.begin()) {
        by_size_.erase(it);
        break;
      }
    cached_ -= oldest.capacity;
    deallocate(oldest.ptr, oldest.capacity);
    by_age_.pop_front();
  }
}

size_t BufferPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

size_t BufferPool::cached_blocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_age_.size();
}

void BufferPool::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Cached& c : by_age_) deallocate(c.ptr, c.capacity);
  by_age_.clear();
  by_size_.clear();
  cached_ = 0;
}

std::shared_ptr<BufferPool> host_pool() {
  // A steady pipeline reuses each block within an iteration or its prefetch depth: tens of acquires
  // (a few pooled outputs per operator, two or three iterations in flight). A longer window keeps
  // more blocks of sizes that do not recur: in a soak alternating pipelines the cache swung between
  // 35 and 42 MB with 1,024.
  static auto pool = std::make_shared<BufferPool>(size_t(512) << 20, 256);
  return pool;
}

}  // namespace penstock
