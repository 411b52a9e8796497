#include "engine/buffer_pool.h"

#include <cstdlib>
#include <new>

#include "engine/module.h"

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

namespace {

// Owns one pooled block; it is the numpy array's base, so the block returns to the pool when
// the last array viewing it is freed.
struct PooledBlock {
  std::shared_ptr<BufferPool> pool;
  void* ptr;
  size_t capacity;
  ~PooledBlock() { pool->release(ptr, capacity); }
};

}  // namespace

py::array empty_pooled(size_t nbytes) {
  auto pool = host_pool();
  size_t capacity = 0;
  void* p = pool->acquire(nbytes, &capacity);
  auto* block = new PooledBlock{pool, p, capacity};
  py::capsule owner(block, [](void* b) { delete static_cast<PooledBlock*>(b); });
  return py::array(py::dtype("uint8"), {static_cast<py::ssize_t>(nbytes)}, {1}, static_cast<uint8_t*>(p), owner);
}

}  // namespace penstock

PENSTOCK_BINDINGS(buffer_pool) {
  m.def("empty_pooled", &penstock::empty_pooled,
        "An uninitialized uint8 array from the host buffer pool; its memory returns to the pool "
        "when the array (and every view of it) is freed", py::arg("nbytes"));
  m.def("pool_cached_bytes", [] { return penstock::host_pool()->cached_bytes(); },
        "Bytes held by the host buffer pool for reuse");
  m.def("pool_clear", [] { penstock::host_pool()->clear(); }, "Frees every cached buffer");
}
