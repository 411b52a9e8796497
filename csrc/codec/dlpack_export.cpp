// DLPack views of pipeline outputs (see dlpack_export.h).
#include "codec/dlpack_export.h"

#include <memory>
#include <stdexcept>
#include <utility>

#include "codec/cuda_driver.h"
#include "codec/stream_queue.h"

namespace penstock::codec {
namespace {

struct View {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
  void (*release_owner)(void*) = nullptr;
  void* owner = nullptr;
  int device_id = 0;
  uintptr_t producer = 0;  // the stream made to wait for the consumer at release (0: none)
  uintptr_t consumer = 0;
};

// The stream handle the driver takes for a DLPack stream number: 1 (legacy default) is 0.
uintptr_t driver_stream(int64_t stream) { return stream == 1 ? 0 : uintptr_t(stream); }

bool is_default_stream(int64_t stream) { return stream == 0 || stream == 1 || stream == 2; }

void release_view(DLManagedTensor* managed) {
  std::unique_ptr<View> view(static_cast<View*>(managed->manager_ctx));
  if (view->producer) {
    try {
      CurrentDevice current(view->device_id);
      wait_for_stream(view->producer, view->consumer);
    } catch (const std::exception&) {
      // the process is ending (the driver is shut down): no work is left to order
    }
  }
  if (view->release_owner) view->release_owner(view->owner);
}

}  // namespace

DLManagedTensor* export_view(ExportRequest request) {
  if (request.shape.size() != request.strides.size())
    throw std::invalid_argument("export_view: one stride per dimension");
  const bool on_gpu = request.device.device_type == kDLCUDA;
  const bool ordered = on_gpu && request.consumer != -1 && (request.event || request.producer);
  auto view = std::make_unique<View>();
  if (ordered) {
    CurrentDevice current(request.device.device_id);
    const uintptr_t consumer = driver_stream(request.consumer);
    if (request.event)
      wait_event(consumer, request.event);
    else
      wait_for_stream(consumer, request.producer);
    if (request.producer && is_default_stream(request.consumer)) {
      view->producer = request.producer;
      view->consumer = consumer;
    }
  }
  view->shape = std::move(request.shape);
  view->strides = std::move(request.strides);
  view->release_owner = request.release_owner;
  view->owner = request.owner;
  view->device_id = request.device.device_id;
  DLTensor& t = view->managed.dl_tensor;
  t.data = reinterpret_cast<void*>(request.data);
  t.device = request.device;
  t.ndim = static_cast<int32_t>(view->shape.size());
  t.dtype = request.dtype;
  t.shape = view->shape.data();
  t.strides = view->strides.data();
  t.byte_offset = 0;
  view->managed.manager_ctx = view.get();
  view->managed.deleter = release_view;
  return &view.release()->managed;
}

}  // namespace penstock::codec
