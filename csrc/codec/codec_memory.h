// The device and pinned memory nvImageCodec's codecs ask for (nvJPEG's decoders' buffers among
// them), kept and reused instead of given back to the CUDA driver, as DALI gives nvImageCodec
// allocators over its pools.
//
// Without an allocator of the caller's, nvJPEG frees with cudaFree and cudaFreeHost, which wait for
// all the work queued on the GPU: beside a training model, most of a step. A block given back on a
// stream is reused once the work queued on that stream before has run (an event recorded then,
// queried, never waited for), so no call here waits for the GPU. On an H100 the hardware decoder's
// codecs took 2 MiB of each kind, all of it in their first calls.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace penstock::codec {

class CodecMemory {
 public:
  enum class Kind { kDevice, kPinned };
  struct Counts {
    int64_t blocks = 0;  // held, taken from the driver
    int64_t bytes = 0;
    int64_t reused = 0;  // allocations served by a block given back before
  };

  CodecMemory(Kind kind, int device_id) : kind_(kind), device_id_(device_id) {}
  CodecMemory(const CodecMemory&) = delete;
  CodecMemory& operator=(const CodecMemory&) = delete;
  ~CodecMemory();  // after the codecs that used it: waits for each block's last use, then frees

  // nvImageCodec's allocator entry points (nvimgcodecDeviceMalloc_t and the like); 0 on success
  static int allocate(void* self, void** ptr, size_t size, void* stream);
  static int give_back(void* self, void* ptr, size_t size, void* stream);

  Counts counts() const;

 private:
  struct Block {
    size_t capacity;
    void* event = nullptr;  // recorded when last given back (nullptr: never given back)
    bool in_use = true;
  };
  int take(void** ptr, size_t size);
  int put(void* ptr, void* stream);
  void free_unused();  // out of memory: the free blocks no queued work uses go back to the driver
  int driver_alloc(void** ptr, size_t size) const;
  void driver_free(void* ptr) const;

  const Kind kind_;
  const int device_id_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // by capacity
  std::unordered_map<void*, Block> blocks_;  // every block, free or in use
  Counts counts_;
};

}  // namespace penstock::codec
