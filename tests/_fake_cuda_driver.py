"""A CUDA driver that records what the engine asks of it, for host tests of the engine's CUDA
bookkeeping: built from source here and loaded as libcuda.so.1 (LD_LIBRARY_PATH) by a Python process
of its own. Events pass when the test says so (pass_every_event); memory is the host's, the driver
counts what it gave and took back, and runs out past the limit the test sets (set_memory_limit)."""
import os
import shutil
import subprocess
import sys

SOURCE = r"""
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>
struct Event { bool recorded = false, passed = false; uintptr_t stream = 0; };
static std::vector<Event*> events;
static std::vector<uintptr_t> waits;  // the streams made to wait for an event
static thread_local void* current = nullptr;
static int allocations = 0, frees = 0;  // device and pinned memory alike
static size_t live = 0, limit = ~size_t(0);  // bytes allocated and not freed; past the limit: out of memory
static std::unordered_map<void*, size_t> sizes;
static int take(void** ptr, size_t size) {
  if (live + size > limit) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  ++allocations; live += size; *ptr = std::malloc(size); sizes[*ptr] = size;
  return 0;
}
static void give(void* ptr) { ++frees; live -= sizes[ptr]; sizes.erase(ptr); std::free(ptr); }
static int gil_held = -1;  // whether the caller held the GIL at the last event recorded, wait or copy queued
extern "C" {
int PyGILState_Check(void);  // the test's Python, in whose process the fake is loaded
int cuCtxGetCurrent(void** ctx) { *ctx = current; return 0; }
int cuCtxSetCurrent(void* ctx) { current = ctx; return 0; }
int cuDeviceGet(int* device, int ordinal) { *device = ordinal; return 0; }
int cuDevicePrimaryCtxRetain(void** ctx, int device) { *ctx = reinterpret_cast<void*>(0x1000 + device); return 0; }
int cuEventCreate(void** event, unsigned) { events.push_back(new Event); *event = events.back(); return 0; }
int cuEventRecord(void* event, void* stream) {
  auto* e = static_cast<Event*>(event);
  gil_held = PyGILState_Check();
  e->recorded = true; e->passed = false; e->stream = reinterpret_cast<uintptr_t>(stream);
  return 0;
}
int cuEventQuery(void* event) { return static_cast<Event*>(event)->passed ? 0 : 600; }
int cuEventSynchronize(void* event) { static_cast<Event*>(event)->passed = true; return 0; }
int cuEventDestroy_v2(void*) { return 0; }
int cuStreamWaitEvent(void* stream, void*, unsigned) {
  gil_held = PyGILState_Check();
  waits.push_back(reinterpret_cast<uintptr_t>(stream));
  return 0;
}
int cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                   void**) { return 1; }
// device memory is the host's: a copy is a memcpy, counted by the call that made it
static int copy_calls = 0, batch_calls = 0, batch_status = 0;
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, size_t size, void*) {
  ++copy_calls; gil_held = PyGILState_Check(); std::memcpy(reinterpret_cast<void*>(dst), src, size); return 0;
}
#ifndef NO_BATCH_COPY
struct CopyAttributes { int order; int src_location[2]; int dst_location[2]; unsigned flags; };
int cuMemcpyBatchAsync_v2(unsigned long long* dsts, unsigned long long* srcs, size_t* sizes, size_t count,
                          CopyAttributes* attrs, size_t* attrs_at, size_t num_attrs, void* stream) {
  ++batch_calls;
  if (batch_status) return batch_status;
  // what the engine must ask: every copy read in stream order, on a stream of its own
  if (!stream || num_attrs != 1 || attrs_at[0] != 0 || attrs[0].order != 1 || attrs[0].flags) return 1;
  for (size_t i = 0; i < count; ++i)
    std::memcpy(reinterpret_cast<void*>(dsts[i]), reinterpret_cast<void*>(srcs[i]), sizes[i]);
  return 0;
}
#endif
int cuCtxGetStreamPriorityRange(int*, int*) { return 1; }
int cuMemAlloc_v2(unsigned long long* ptr, size_t size) {
  void* p = nullptr; int status = take(&p, size); *ptr = reinterpret_cast<unsigned long long>(p); return status;
}
int cuMemFree_v2(unsigned long long ptr) { give(reinterpret_cast<void*>(ptr)); return 0; }
int cuMemHostAlloc(void** ptr, size_t size, unsigned) { return take(ptr, size); }
int cuMemFreeHost(void* ptr) { give(ptr); return 0; }
// for the test
void pass_every_event() { for (Event* e : events) if (e->recorded) e->passed = true; }
int waits_on(uintptr_t stream) { int n = 0; for (uintptr_t s : waits) n += s == stream; return n; }
uintptr_t last_recorded_on() { return events.empty() ? ~uintptr_t(0) : events.back()->stream; }
int driver_allocations() { return allocations; }
int driver_frees() { return frees; }
void set_memory_limit(size_t bytes) { limit = bytes; }
int copies_made() { return copy_calls; }
int batches_made() { return batch_calls; }
void fail_batches_with(int status) { batch_status = status; }
int gil_held_at_last_call() { return gil_held; }
}
"""


def run_on_fake_driver(folder, script: str, defines: tuple[str, ...] = ()) -> str:
    """Runs ``script`` in a Python process whose CUDA driver is the fake, built in ``folder`` with the
    preprocessor ``defines`` (``NO_BATCH_COPY``: a driver before CUDA 12.8, without batched copies);
    returns what it printed (an error if it failed). The script reaches the fake's test functions
    through ``ctypes.CDLL("libcuda.so.1")``."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    assert cxx, "a C++ compiler is needed (the engine is built with one)"
    source = os.path.join(folder, "driver.cpp")
    with open(source, "w") as f:
        f.write(SOURCE)
    subprocess.run([cxx, "-std=c++17", "-O1", "-shared", "-fPIC", *(f"-D{d}" for d in defines), "-o",
                    os.path.join(folder, "libcuda.so.1"), source], check=True)
    env = {**os.environ, "LD_LIBRARY_PATH": f"{folder}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
