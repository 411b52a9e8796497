// DLPack views of a pipeline's outputs for a consumer (torch, JAX, CuPy ...), made in one call
// with the GIL held: the hand-off runs on the training loop's thread for every batch, where each
// Python object made and each call that gives the GIL away costs the loop time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace penstock::codec {

// DLPack 0.8's ABI (the unversioned "dltensor" capsule every consumer takes).
struct DLDevice {
  int32_t device_type;  // kDLCPU = 1, kDLCUDA = 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

constexpr int32_t kDLCPU = 1;
constexpr int32_t kDLCUDA = 2;

// What a view is of and how the consumer's work is ordered around it.
struct ExportRequest {
  uintptr_t data = 0;
  std::vector<int64_t> shape, strides;  // strides in elements, one per dimension
  DLDataType dtype{};
  DLDevice device{};
  // The consumer's stream as the DLPack protocol names it (1: the legacy default stream, 2: the
  // per-thread one, -1: no ordering wanted); the producer's work ends at `event` (a CUevent) or,
  // without one, at what is queued on `producer` (a CUstream; 0 with no event: nothing to order).
  int64_t consumer = -1;
  uintptr_t event = 0;
  uintptr_t producer = 0;
  // Called with `owner` once the consumer is done with the view (its tensor freed and, for a
  // consumer on a default stream, the work it queued until then passed): `owner` keeps the memory
  // valid until then.
  void (*release_owner)(void*) = nullptr;
  void* owner = nullptr;
};

// Orders the consumer's stream after the producer's work (CUDA views), then returns a view that
// keeps `owner` until the consumer frees it. A producer with a stream of its own, lending to a
// consumer on a default stream (a training loop's), gets the memory back for its pool only once
// the consumer's work queued before the release has passed (an event on the consumer's stream,
// looked at by later releases and release_passed_owners). The producer's stream does not wait for
// the consumer's: beside a model that keeps the GPU busy, such a wait held every piece of the
// pipeline's GPU work queued after it, the decoders' included, until the model had run the steps
// it had queued. A consumer on a stream of its own keeps the view alive while its work may still
// read it, as with any DLPack exchange (its stream may be gone by the time the view is freed).
DLManagedTensor* export_view(ExportRequest request);

// Lets go of the owners held past their consumers' work (export_view) whose work has passed, all
// of them if `wait` (waiting for the GPU); returns how many. Called with the GIL or not (the
// owners' release handles both).
size_t release_passed_owners(bool wait);

}  // namespace penstock::codec
