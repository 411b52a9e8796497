// DLPack views of pipeline outputs (see dlpack_export.h).
#include "codec/dlpack_export.h"

#include <memory>
#include <mutex>
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
  bool held_past_consumer = false;  // released only once the consumer's stream passed the release
  uintptr_t consumer = 0;
};

// The stream handle the driver takes for a DLPack stream number: 1 (legacy default) is 0.
uintptr_t driver_stream(int64_t stream) { return stream == 1 ? 0 : uintptr_t(stream); }

bool is_default_stream(int64_t stream) { return stream == 0 || stream == 1 || stream == 2; }

// An owner whose view the consumer freed, kept until `passed` (recorded on the consumer's stream
// at the release) has passed.
struct HeldOwner {
  void* passed;
  int device_id;
  void (*release_owner)(void*);
  void* owner;
};

// Never destroyed (views may be freed as the process ends): owners still held then are the
// interpreter's to let go.
std::mutex& held_mutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
std::vector<HeldOwner>& held() {
  static auto* list = new std::vector<HeldOwner>();
  return *list;
}

// Whether `h`'s consumer work has passed (waiting for it if `wait`); its event is gone if so. A
// driver that is shut down has no work left to wait for.
bool has_passed(const HeldOwner& h, bool wait) {
  try {
    const Driver& cuda = driver();
    CurrentDevice current(h.device_id);
    int status = wait ? cuda.cuEventSynchronize(h.passed) : cuda.cuEventQuery(h.passed);
    if (status == kCudaErrorNotReady) return false;
    cuda.cuEventDestroy(h.passed);
  } catch (const std::exception&) {
  }
  return true;
}

// Holds `owner` until the work queued on the consumer's stream so far has passed.
void hold_past_consumer(const View& view) {
  CurrentDevice current(view.device_id);
  void* event = recorded_event(view.consumer);
  std::lock_guard<std::mutex> lock(held_mutex());
  held().push_back({event, view.device_id, view.release_owner, view.owner});
}

void release_view(DLManagedTensor* managed) {
  std::unique_ptr<View> view(static_cast<View*>(managed->manager_ctx));
  if (view->held_past_consumer) {
    bool held_now = false;
    try {
      hold_past_consumer(*view);
      held_now = true;
    } catch (const std::exception&) {
      // the process is ending (the driver is shut down): no work is left to order
    }
    if (held_now) {
      release_passed_owners(false);  // the views freed before, most of them passed by now
      return;
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
      view->held_past_consumer = true;
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

size_t release_passed_owners(bool wait) {
  std::vector<HeldOwner> passed;
  {
    std::lock_guard<std::mutex> lock(held_mutex());
    auto& list = held();
    if (wait) {
      passed.swap(list);  // waited for below, without the lock
    } else {
      auto kept = list.begin();
      for (auto& h : list) {
        if (has_passed(h, false))
          passed.push_back(h);
        else
          *kept++ = h;
      }
      list.erase(kept, list.end());
    }
  }
  if (wait)
    for (auto& h : passed) has_passed(h, true);
  // outside the lock: dropping an owner may free another view
  for (auto& h : passed)
    if (h.release_owner) h.release_owner(h.owner);
  return passed.size();
}

}  // namespace penstock::codec
