#pragma once

#include <cstddef>
#include <utility>

namespace penstock::codec {

// The few CUDA driver entry points for the work queued around a decoding, for the pipeline's own
// launches and copies (stream_queue.h) and for the codecs' memory (codec_memory.h). Handles are the
// runtime API's: cudaStream_t and cudaEvent_t are CUstream and CUevent.
struct Driver {
  int (*cuCtxGetCurrent)(void**);
  int (*cuStreamWaitEvent)(void*, void*, unsigned);
  int (*cuEventRecord)(void*, void*);
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                        void**);
  int (*cuMemcpyHtoDAsync)(unsigned long long, const void*, size_t, void*);
  int (*cuEventCreate)(void**, unsigned);
  int (*cuEventDestroy)(void*);
  int (*cuEventQuery)(void*);
  int (*cuEventSynchronize)(void*);
  int (*cuCtxSetCurrent)(void*);
  int (*cuDeviceGet)(int*, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuCtxGetStreamPriorityRange)(int*, int*);
  int (*cuMemAlloc)(unsigned long long*, size_t);
  int (*cuMemFree)(unsigned long long);
  int (*cuMemHostAlloc)(void**, size_t, unsigned);
  int (*cuMemFreeHost)(void*);
  // Batched copies (drivers of CUDA 12.8 and later; null before): CUDA 13's signature, and 12.8's
  // with a failure index after the attributes. Either is one driver call for many copies.
  int (*cuMemcpyBatchAsync_v2)(unsigned long long*, unsigned long long*, size_t*, size_t, void*, size_t*, size_t,
                               void*);
  int (*cuMemcpyBatchAsync)(unsigned long long*, unsigned long long*, size_t*, size_t, void*, size_t*, size_t,
                            size_t*, void*);
};

// The CUDA driver's entry points (libcuda.so.1, loaded on first use).
const Driver& driver();

constexpr unsigned kEventBlockingSync = 0x1, kEventDisableTiming = 0x2;  // CU_EVENT_* flags
constexpr int kCudaErrorNotReady = 600;  // CUDA_ERROR_NOT_READY: an event or stream still has work to do

// Throws for a non-zero status of a CUDA driver call.
void check_cuda(int status, const char* what);

// Makes GPU `device_id`'s primary context (the runtime API's, which CuPy and the frameworks use)
// current on the calling thread for the scope, as `with cupy.cuda.Device(id)` does, without Python.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device_id);
  ~CurrentDevice();
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  void* previous_ = nullptr;
  bool switched_ = false;
};

// GPU `device_id`'s stream priorities: (least, greatest); a greater priority is a smaller number.
std::pair<int, int> stream_priority_range(int device_id);

}  // namespace penstock::codec
