// Work that the pipeline's Python side queues on a CUDA stream: kernel launches and host -> device
// copies through pinned staging, each one driver call of microseconds (a batch's launches of a
// kernel family in one call). The bindings hold the GIL through it unless the caller asks them not
// to: the pipeline's threads ask (core/penstock/_cuda/_stream_queue.py says why), the thread that
// consumes the batches does not.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace penstock::codec {

// Launches `function` (a CUfunction) on `stream`; `params` holds each parameter's bytes at its
// `offsets` entry, as the kernel's signature lays them out.
void launch_kernel(uintptr_t function, const std::array<unsigned, 3>& grid, const std::array<unsigned, 3>& block,
                   unsigned shared_bytes, uintptr_t stream, const uint8_t* params, const std::vector<size_t>& offsets);

// Launches functions[l] (CUfunctions) with grids[l] blocks of `block` threads on `stream`, for each l
// in order; launch l's parameters are slots[l * per_launch ...]: one 8-byte slot per parameter, a
// narrower parameter in its slot's low bytes. One call queues a whole batch's launches of a kernel
// family whose parameters are all pointers and integers.
void launch_kernels(const uintptr_t* functions, const int64_t* grids, size_t launches, unsigned block,
                    uintptr_t stream, const int64_t* slots, size_t per_launch);

// Copies `nbytes` from host memory `src` into the pinned block `staging` (unless `src` is its start:
// data made in the staging), then queues the copy from there to device memory `dst` on `stream`.
void copy_to_device(uintptr_t dst, const void* src, size_t nbytes, uintptr_t staging, uintptr_t stream);

// Queues on `stream` the copies of `count` ranges of the pinned block `staging` (`staging_bytes`
// long): range i, `sizes[i]` bytes at `offsets[i]`, to device memory `dsts[i]`. Ranges outside the
// block are refused before any copy is queued. One batched driver call where the driver has it
// (CUDA 12.8 and later), else a call a range.
void copy_ranges_to_device(const uint64_t* dsts, uintptr_t staging, size_t staging_bytes, const int64_t* offsets,
                           const int64_t* sizes, size_t count, uintptr_t stream);

// Records `event` (a CUevent) after the work queued on `stream` so far.
void record_event(uintptr_t event, uintptr_t stream);

// Makes `stream` wait for `event` before the work queued on it afterwards.
void wait_event(uintptr_t stream, uintptr_t event);

// A new event (a CUevent, without timing; the caller destroys it) recorded after the work queued
// on `stream` so far.
void* recorded_event(uintptr_t stream);
// Makes `waiting` wait for the work queued on `producer` so far (through an event of its own, made,
// recorded and released here: CUDA keeps a released event until the waits on it are done).
void wait_for_stream(uintptr_t waiting, uintptr_t producer);

}  // namespace penstock::codec
