// nvImageCodec's codec memory, kept for reuse (see codec_memory.h).
#include "codec/codec_memory.h"

#include "codec/cuda_driver.h"
#include "engine/buffer_pool.h"

namespace penstock::codec {

namespace {

constexpr int kFailed = 1;  // what the allocator entry points return for an error of their own

}  // namespace

int CodecMemory::driver_alloc(void** ptr, size_t size) const {
  const Driver& cuda = driver();
  if (kind_ == Kind::kPinned) return cuda.cuMemHostAlloc(ptr, size, 0);
  unsigned long long address = 0;
  int status = cuda.cuMemAlloc(&address, size);
  *ptr = reinterpret_cast<void*>(address);
  return status;
}

void CodecMemory::driver_free(void* ptr) const {
  const Driver& cuda = driver();
  if (kind_ == Kind::kPinned)
    cuda.cuMemFreeHost(ptr);
  else
    cuda.cuMemFree(reinterpret_cast<unsigned long long>(ptr));
}

int CodecMemory::take(void** ptr, size_t size) {
  *ptr = nullptr;
  if (size == 0) return 0;
  const size_t need = BufferPool::size_class(size);
  const Driver& cuda = driver();
  CurrentDevice current(device_id_);  // the codecs' threads and the pipeline's: the device's primary context
  std::lock_guard<std::mutex> lock(mutex_);
  // a block serves requests from half its size: the sizes nvJPEG asks for batch after batch find one
  for (auto it = free_.lower_bound(need); it != free_.end() && it->first <= 2 * need; ++it) {
    Block& block = blocks_.at(it->second);
    if (block.event && cuda.cuEventQuery(block.event) != 0) continue;  // queued work still uses it
    block.in_use = true;
    *ptr = it->second;
    free_.erase(it);
    ++counts_.reused;
    return 0;
  }
  int status = driver_alloc(ptr, need);
  if (status != 0) {
    free_unused();
    status = driver_alloc(ptr, need);
    if (status != 0) return status;
  }
  blocks_.emplace(*ptr, Block{need});
  ++counts_.blocks;
  counts_.bytes += int64_t(need);
  return 0;
}

int CodecMemory::put(void* ptr, void* stream) {
  if (ptr == nullptr) return 0;
  const Driver& cuda = driver();
  CurrentDevice current(device_id_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = blocks_.find(ptr);
  if (found == blocks_.end() || !found->second.in_use) return kFailed;  // not a block of ours in use
  Block& block = found->second;
  int status = block.event ? 0 : cuda.cuEventCreate(&block.event, kEventDisableTiming);
  if (status == 0) status = cuda.cuEventRecord(block.event, stream);
  if (status != 0) return status;
  block.in_use = false;
  free_.emplace(block.capacity, ptr);
  return 0;
}

void CodecMemory::free_unused() {
  const Driver& cuda = driver();
  for (auto it = free_.begin(); it != free_.end();) {
    Block& block = blocks_.at(it->second);
    if (block.event && cuda.cuEventQuery(block.event) != 0) {
      ++it;
      continue;
    }
    if (block.event) cuda.cuEventDestroy(block.event);
    driver_free(it->second);
    --counts_.blocks;
    counts_.bytes -= int64_t(block.capacity);
    blocks_.erase(it->second);
    it = free_.erase(it);
  }
}

int CodecMemory::allocate(void* self, void** ptr, size_t size, void* /*stream*/) {
  try {
    return static_cast<CodecMemory*>(self)->take(ptr, size);
  } catch (...) {  // no current context could be made: nothing may cross nvImageCodec's C API
    return kFailed;
  }
}

int CodecMemory::give_back(void* self, void* ptr, size_t /*size*/, void* stream) {
  try {
    return static_cast<CodecMemory*>(self)->put(ptr, stream);
  } catch (...) {
    return kFailed;
  }
}

CodecMemory::Counts CodecMemory::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

CodecMemory::~CodecMemory() {
  if (blocks_.empty()) return;
  try {
    const Driver& cuda = driver();
    CurrentDevice current(device_id_);
    for (auto& [ptr, block] : blocks_) {
      if (block.event) {
        cuda.cuEventSynchronize(block.event);
        cuda.cuEventDestroy(block.event);
      }
      driver_free(ptr);
    }
  } catch (...) {  // the driver already gone at exit: the process's memory goes with it
  }
}

}  // namespace penstock::codec
