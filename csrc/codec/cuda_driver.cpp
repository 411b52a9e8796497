// Loading the CUDA driver's entry points (see cuda_driver.h).
#include "codec/cuda_driver.h"

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>

#include "codec/dynamic_library.h"

namespace penstock::codec {

const Driver& driver() {
  static const Driver loaded = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(std::string("cannot load the CUDA driver: ") + dlerror());
    Driver d;
    bind(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent);
    bind(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent);
    bind(lib, "cuEventRecord", d.cuEventRecord);
    bind(lib, "cuLaunchKernel", d.cuLaunchKernel);
    bind(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync);
    bind(lib, "cuEventCreate", d.cuEventCreate);
    bind(lib, "cuEventDestroy_v2", d.cuEventDestroy);
    bind(lib, "cuEventQuery", d.cuEventQuery);
    bind(lib, "cuEventSynchronize", d.cuEventSynchronize);
    bind(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent);
    bind(lib, "cuDeviceGet", d.cuDeviceGet);
    bind(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
    bind(lib, "cuCtxGetStreamPriorityRange", d.cuCtxGetStreamPriorityRange);
    bind(lib, "cuMemAlloc_v2", d.cuMemAlloc);
    bind(lib, "cuMemFree_v2", d.cuMemFree);
    bind(lib, "cuMemHostAlloc", d.cuMemHostAlloc);
    bind(lib, "cuMemFreeHost", d.cuMemFreeHost);
    bind_if_present(lib, "cuMemcpyBatchAsync_v2", d.cuMemcpyBatchAsync_v2);
    bind_if_present(lib, "cuMemcpyBatchAsync", d.cuMemcpyBatchAsync);
    return d;
  }();
  return loaded;
}

void check_cuda(int status, const char* what) {
  if (status != 0)
    throw std::runtime_error(std::string("CUDA driver: ") + what + " failed with CUDA error " +
                             std::to_string(status));
}

namespace {

// The primary context of each GPU, retained once: the runtime API keeps it for the process's life.
void* primary_context(int device_id) {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<void*>, kMaxDevices> contexts{};
  if (device_id < 0 || device_id >= kMaxDevices)
    throw std::invalid_argument("CUDA device " + std::to_string(device_id) + " is out of range");
  void* ctx = contexts[device_id].load(std::memory_order_acquire);
  if (!ctx) {
    const Driver& cuda = driver();
    int device = 0;
    check_cuda(cuda.cuDeviceGet(&device, device_id), "finding a device");
    check_cuda(cuda.cuDevicePrimaryCtxRetain(&ctx, device), "retaining a device's primary context");
    void* expected = nullptr;
    if (!contexts[device_id].compare_exchange_strong(expected, ctx)) ctx = expected;  // retained twice: harmless
  }
  return ctx;
}

}  // namespace

CurrentDevice::CurrentDevice(int device_id) {
  const Driver& cuda = driver();
  void* ctx = primary_context(device_id);
  check_cuda(cuda.cuCtxGetCurrent(&previous_), "reading the current context");
  if (previous_ != ctx) {
    check_cuda(cuda.cuCtxSetCurrent(ctx), "making a device's context current");
    switched_ = true;
  }
}

CurrentDevice::~CurrentDevice() {
  if (switched_) driver().cuCtxSetCurrent(previous_);
}

std::pair<int, int> stream_priority_range(int device_id) {
  CurrentDevice current(device_id);
  int least = 0, greatest = 0;
  check_cuda(driver().cuCtxGetStreamPriorityRange(&least, &greatest), "reading the stream priority range");
  return {least, greatest};
}

}  // namespace penstock::codec
