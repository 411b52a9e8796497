// Launches and copies queued on a stream (see stream_queue.h).
#include "codec/stream_queue.h"

#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "codec/cuda_driver.h"

namespace penstock::codec {

void launch_kernel(uintptr_t function, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                   unsigned shared_bytes, uintptr_t stream, const uint8_t* params, const std::vector<size_t>& offsets) {
  if (!function) throw std::invalid_argument("launch_kernel: no kernel function");
  std::vector<void*> args(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) args[i] = const_cast<uint8_t*>(params + offsets[i]);
  check_cuda(driver().cuLaunchKernel(reinterpret_cast<void*>(function), grid[0], grid[1], grid[2], block[0],
                                     block[1], block[2], shared_bytes, reinterpret_cast<void*>(stream),
                                     args.empty() ? nullptr : args.data(), nullptr),
             "launching a kernel");
}

void launch_kernels(const uintptr_t* functions, const int64_t* grids, size_t launches, unsigned block,
                    uintptr_t stream, const int64_t* slots, size_t per_launch) {
  std::vector<void*> args(per_launch);
  for (size_t l = 0; l < launches; ++l) {
    if (grids[l] <= 0) continue;  // nothing to do in this launch
    if (!functions[l]) throw std::invalid_argument("launch_kernels: no kernel function");
    if (grids[l] > int64_t(0x7fffffff)) throw std::invalid_argument("launch_kernels: a grid is too large");
    for (size_t p = 0; p < per_launch; ++p) args[p] = const_cast<int64_t*>(slots + l * per_launch + p);
    check_cuda(driver().cuLaunchKernel(reinterpret_cast<void*>(functions[l]), unsigned(grids[l]), 1, 1, block, 1, 1, 0,
                                       reinterpret_cast<void*>(stream), per_launch ? args.data() : nullptr, nullptr),
               "launching a kernel");
  }
}

void copy_to_device(uintptr_t dst, const void* src, size_t nbytes, uintptr_t staging, uintptr_t stream) {
  if (!nbytes) return;
  if (reinterpret_cast<const void*>(staging) != src)  // else the data was made in the staging
    std::memcpy(reinterpret_cast<void*>(staging), src, nbytes);
  check_cuda(driver().cuMemcpyHtoDAsync(dst, reinterpret_cast<void*>(staging), nbytes, reinterpret_cast<void*>(stream)),
             "queueing a host -> device copy");
}

namespace {

// CUmemcpyAttributes: the source read in stream order (the staging stays untouched until the copy's
// event passes), no location hints (they are for managed memory), no flags.
struct CopyAttributes {
  int src_access_order = 1;  // CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
  int src_location[2] = {0, 0};
  int dst_location[2] = {0, 0};
  unsigned flags = 0;
};
static_assert(sizeof(CopyAttributes) == 24, "CUmemcpyAttributes is 24 bytes");

// Whether the driver's batched copy has failed once: the per-range copies serve from then on.
std::atomic<bool> batch_copy_failed{false};

// The copies as one batched driver call, if the driver has one that takes them (else false: nothing
// queued that matters, as copying a range again writes the same bytes).
bool copy_batch(std::vector<unsigned long long>& dsts, std::vector<unsigned long long>& srcs,
                std::vector<size_t>& sizes, uintptr_t stream) {
  const Driver& cuda = driver();
  if (!stream || batch_copy_failed.load(std::memory_order_relaxed)) return false;  // (not the legacy stream)
  CopyAttributes attributes;
  size_t first = 0;
  int status = -1;
  if (cuda.cuMemcpyBatchAsync_v2)
    status = cuda.cuMemcpyBatchAsync_v2(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attributes, &first, 1,
                                        reinterpret_cast<void*>(stream));
  else if (cuda.cuMemcpyBatchAsync) {
    size_t failed = 0;
    status = cuda.cuMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), dsts.size(), &attributes, &first, 1,
                                     &failed, reinterpret_cast<void*>(stream));
  }
  if (status == 0) return true;
  if (status != -1) batch_copy_failed.store(true, std::memory_order_relaxed);
  return false;
}

}  // namespace

void copy_ranges_to_device(const uint64_t* dsts, uintptr_t staging, size_t staging_bytes, const int64_t* offsets,
                           const int64_t* sizes, size_t count, uintptr_t stream) {
  for (size_t i = 0; i < count; ++i)
    if (offsets[i] < 0 || sizes[i] < 0 || uint64_t(offsets[i]) + uint64_t(sizes[i]) > staging_bytes)
      throw std::invalid_argument("copy_ranges_to_device: range " + std::to_string(i) + " lies outside the staging");
  // One driver call for the batch where the driver has it: each call takes the driver's lock, which a
  // training model's threads wait for beside the pipeline. A call a range made ~130 calls a batch of
  // ResNet-18's train pipeline; on an H100 the model trained as fast either way (2026-12-07, 2 rounds:
  // 14,051 img/s batched, 14,419 a call a range), so the batch is for the lock, not a measured gain.
  std::vector<unsigned long long> batch_dsts, batch_srcs;
  std::vector<size_t> batch_sizes;
  for (size_t i = 0; i < count; ++i) {
    if (!sizes[i]) continue;
    batch_dsts.push_back(dsts[i]);
    batch_srcs.push_back(staging + uint64_t(offsets[i]));
    batch_sizes.push_back(size_t(sizes[i]));
  }
  if (batch_dsts.empty() || copy_batch(batch_dsts, batch_srcs, batch_sizes, stream)) return;
  for (size_t i = 0; i < batch_dsts.size(); ++i)
    check_cuda(driver().cuMemcpyHtoDAsync(batch_dsts[i], reinterpret_cast<void*>(batch_srcs[i]), batch_sizes[i],
                                          reinterpret_cast<void*>(stream)),
               "queueing a host -> device copy");
}

void record_event(uintptr_t event, uintptr_t stream) {
  check_cuda(driver().cuEventRecord(reinterpret_cast<void*>(event), reinterpret_cast<void*>(stream)),
             "recording an event");
}

void wait_event(uintptr_t stream, uintptr_t event) {
  check_cuda(driver().cuStreamWaitEvent(reinterpret_cast<void*>(stream), reinterpret_cast<void*>(event), 0),
             "waiting for an event");
}

void* recorded_event(uintptr_t stream) {
  constexpr unsigned kDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
  const Driver& cuda = driver();
  void* event = nullptr;
  check_cuda(cuda.cuEventCreate(&event, kDisableTiming), "creating an event");
  int recorded = cuda.cuEventRecord(event, reinterpret_cast<void*>(stream));
  if (recorded != 0) {
    cuda.cuEventDestroy(event);
    check_cuda(recorded, "recording an event");
  }
  return event;
}

void wait_for_stream(uintptr_t waiting, uintptr_t producer) {
  const Driver& cuda = driver();
  void* event = recorded_event(producer);
  int waited = cuda.cuStreamWaitEvent(reinterpret_cast<void*>(waiting), event, 0);
  cuda.cuEventDestroy(event);
  check_cuda(waited, "waiting for an event");
}

}  // namespace penstock::codec
