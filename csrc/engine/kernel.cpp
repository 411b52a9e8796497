#include "engine/kernel.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "engine/buffer_pool.h"

namespace penstock {
namespace {

// Owns one pooled block: the block returns to the pool when the last array viewing it is freed.
struct PooledBlock {
  std::shared_ptr<BufferPool> pool;
  void* ptr;
  size_t capacity;
  ~PooledBlock() { pool->release(ptr, capacity); }
};

}  // namespace

Array Array::empty(char kind, int64_t itemsize, std::vector<int64_t> shape, bool pooled) {
  int64_t bytes = itemsize;
  for (int64_t s : shape) {
    if (s < 0) throw std::invalid_argument("negative array dimension");
    bytes *= s;
  }
  std::shared_ptr<void> owner;
  void* data;
  if (pooled) {
    auto block = std::make_shared<PooledBlock>(PooledBlock{host_pool(), nullptr, 0});
    block->ptr = block->pool->acquire(size_t(bytes), &block->capacity);
    data = block->ptr;
    owner = std::move(block);
  } else {
    // numpy's own allocations are 16-byte aligned; malloc's are too
    data = std::malloc(size_t(std::max<int64_t>(bytes, 1)));
    if (!data) throw std::bad_alloc();
    owner = std::shared_ptr<void>(data, std::free);
  }
  return Array(data, kind, itemsize, std::move(shape), true, true, std::move(owner));
}

BatchView make_batch_view(const Array& data, const I64Array& shapes, const I64Array& offsets, bool writable) {
  if (!data.c_contiguous()) throw std::invalid_argument("batch buffer must be contiguous");
  if (writable && !data.writeable()) throw std::invalid_argument("output buffer is read-only");
  if (shapes.ndim() != 2 || offsets.ndim() != 1 || shapes.shape(0) != offsets.shape(0))
    throw std::invalid_argument("batch shapes must be [N, ndim] and offsets [N]");
  BatchView v;
  v.data = const_cast<void*>(data.data());
  v.num_samples = shapes.shape(0);
  v.ndim = shapes.shape(1);
  v.shapes = shapes.data();
  v.offsets = offsets.data();
  v.elem_size = data.itemsize();
  int64_t capacity = data.size();
  for (int64_t i = 0; i < v.num_samples; ++i)
    if (v.offsets[i] < 0 || v.offsets[i] + v.volume(i) > capacity)
      throw std::out_of_range("sample " + std::to_string(i) + " lies outside its batch buffer");
  return v;
}

}  // namespace penstock
