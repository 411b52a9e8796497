// NVIDIA nvImageCodec through its C API, opened at run time (dlopen), so the engine builds and
// runs without it. The mixed decoders decode a whole batch of JPEGs in one call here, with the GIL
// released throughout: nvImageCodec's Python binding takes the GIL back for every image, which the
// pipeline's Python threads would hold, so it used to need decoder processes of its own, each with
// a CUDA context (device memory) of its own.
//
// The few structures used, and the entry points, are in nvimgcodec_api.h; the CUDA driver's in
// cuda_driver.h.
//
// A decode call can also queue work of its own around the decoding on the same CUDA stream, with
// the decoder's turn held and without the GIL (the CUDA driver's API, opened at run time too):
// waiting for an event first, and a kernel (the crop windows' gather out of the decoded images),
// which may wait for an event of its own, and an event after it. The next batch's call then starts
// the moment this one ends, instead of after Python code that would first have to get the GIL back
// from the pipeline's threads.
//
// The codecs allocate through the decoder (codec_memory.h): nvJPEG's own allocations would be freed
// with cudaFree, a wait for all the GPU's queued work (a training step beside a model).
//
// nvJPEG's hardware engines do not wait for the work queued on their stream before they write
// (seen on H100s: torchcodec #1634): memory reused in stream order (an output block freed while
// kernels queued before still read it, the scratch the last batch's gather reads) would be written
// under that work. With them among the backends, the host waits for the stream first.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "codec/cuda_driver.h"
#include "codec/nvimgcodec.h"

namespace penstock {

using namespace codec;  // nvImageCodec's structures and entry points, the CUDA driver's

ParsedBatch::~ParsedBatch() { close(); }

void ParsedBatch::close() {
  for (Handle h : streams_) api_.CodeStreamDestroy(h);
  for (Handle h : regions_of_) api_.CodeStreamDestroy(h);
  streams_.clear();
  regions_of_.clear();
  closed_ = true;
}

ArrayOf<bool> ParsedBatch::parsed() const {
  auto out = ArrayOf<bool>::empty({num_samples_});
  bool* p = out.mutable_data();
  std::fill(p, p + num_samples_, false);
  for (int64_t k : which_) p[k] = true;
  return out;
}

ImageCodecDecoder::ImageCodecDecoder(const std::string& library, const std::string& extensions, int device_id,
                                     int cpu_threads, const std::vector<std::tuple<int, float, int>>& backends,
                                     const std::string& options)
    : api_(api(library)), host_buffers_(device_id == kCpuOnlyDevice) {
  CreateInfo info = make<CreateInfo>(kInstanceCreateInfo);
  info.load_builtin_modules = 1;
  info.load_extension_modules = 1;
  info.extension_modules_path = extensions.c_str();
  check(api_.InstanceCreate(&instance_, &info), "creating the instance");
  std::vector<Backend> list;
  for (auto& [kind, load_hint, policy] : backends) {
    hardware_ = hardware_ || kind == kBackendHwGpuOnly;
    Backend b = make<Backend>(kBackend);
    b.kind = kind;
    b.params = make<BackendParams>(kBackendParams);
    b.params.load_hint = load_hint;
    b.params.load_hint_policy = policy;
    list.push_back(b);
  }
  ExecutionParams exec = make<ExecutionParams>(kExecutionParams);
  if (!host_buffers_) {
    device_memory_ = std::make_unique<CodecMemory>(CodecMemory::Kind::kDevice, device_id);
    pinned_memory_ = std::make_unique<CodecMemory>(CodecMemory::Kind::kPinned, device_id);
    device_allocator_ = make<Allocator>(kDeviceAllocator);
    pinned_allocator_ = make<Allocator>(kPinnedAllocator);
    for (auto [allocator, memory] : {std::pair{&device_allocator_, device_memory_.get()},
                                     std::pair{&pinned_allocator_, pinned_memory_.get()}}) {
      allocator->allocate = &CodecMemory::allocate;
      allocator->free = &CodecMemory::give_back;
      allocator->ctx = memory;
    }
    exec.device_allocator = &device_allocator_;
    exec.pinned_allocator = &pinned_allocator_;
  }
  exec.max_num_cpu_threads = cpu_threads;
  exec.device_id = device_id;
  exec.num_backends = int(list.size());
  exec.backends = list.data();
  int status = api_.DecoderCreate(instance_, &decoder_, &exec, options.c_str());
  if (status != 0) {
    api_.InstanceDestroy(instance_);
    check(status, "creating the decoder");
  }
}

ImageCodecDecoder::~ImageCodecDecoder() {
  if (queued_) driver().cuEventDestroy(queued_);
  api_.DecoderDestroy(decoder_);  // gives the codecs' memory back, then the members free it
  api_.InstanceDestroy(instance_);
}

std::pair<CodecMemory::Counts, CodecMemory::Counts> ImageCodecDecoder::memory() const {
  if (!device_memory_) return {};
  return {device_memory_->counts(), pinned_memory_->counts()};
}

std::unique_ptr<ParsedBatch> ImageCodecDecoder::parse(ArrayOf<uint8_t> encoded, I64Array starts, I64Array lengths,
                                                      I64Array shapes, bool orient,
                                                      std::optional<I64Array> windows) {
  int64_t n = starts.size();
  if (lengths.size() != n || shapes.ndim() != 2 || shapes.shape(0) != n || shapes.shape(1) < 2)
    throw std::invalid_argument("ImageCodecDecoder.parse: one start, length and (H, W, ...) per sample");
  if (windows && (windows->ndim() != 2 || windows->shape(0) != n || windows->shape(1) != 4))
    throw std::invalid_argument("ImageCodecDecoder.parse: one window (y, x, h, w) per sample");
  const int64_t row = shapes.shape(1);
  const int64_t* window = windows ? windows->data() : nullptr;
  const uint8_t* bytes = encoded.data();
  int64_t size = encoded.size();
  const int64_t *s = starts.data(), *len = lengths.data(), *hw = shapes.data();
  for (int64_t k = 0; k < n; ++k)
    if (s[k] < 0 || len[k] < 0 || s[k] + len[k] > size)
      throw std::out_of_range("ImageCodecDecoder.parse: sample " + std::to_string(k) + " lies outside the encoded buffer");
  auto batch = std::make_unique<ParsedBatch>(api_, encoded, n, orient);
  for (int64_t k = 0; k < n; ++k) {
    Handle cs = nullptr;
    if (api_.CodeStreamCreateFromHostMem(instance_, &cs, bytes + s[k], size_t(len[k]), nullptr) != 0) continue;
    ImageInfo info = make<ImageInfo>(kImageInfo);
    int64_t h = -1, w = -1;
    // An EXIF-oriented image is left to the caller: some backends (the CPU one) write it unturned.
    if (api_.CodeStreamGetImageInfo(cs, &info) == 0 && info.num_planes >= 1 &&
        !(orient && (info.orientation.rotated != 0 || info.orientation.flip_x || info.orientation.flip_y))) {
      h = info.plane_info[0].height;
      w = info.plane_info[0].width;
    }
    if (h != hw[row * k] || w != hw[row * k + 1]) {
      api_.CodeStreamDestroy(cs);
      continue;
    }
    const int64_t* win = window ? window + 4 * k : nullptr;
    if (win && !(win[0] == 0 && win[1] == 0 && win[2] == h && win[3] == w)) {
      if (win[0] < 0 || win[1] < 0 || win[2] < 1 || win[3] < 1 || win[0] + win[2] > h || win[1] + win[3] > w) {
        api_.CodeStreamDestroy(cs);
        continue;
      }
      CodeStreamView view = make<CodeStreamView>(kCodeStreamView);
      view.region = make<Region>(kRegion);
      view.region.ndim = 2;
      view.region.start[0] = int(win[0]);
      view.region.start[1] = int(win[1]);
      view.region.end[0] = int(win[0] + win[2]);
      view.region.end[1] = int(win[1] + win[3]);
      Handle region = nullptr;
      if (api_.CodeStreamGetSubCodeStream(cs, &region, &view) != 0 || region == nullptr) {
        api_.CodeStreamDestroy(cs);
        continue;
      }
      batch->regions_of_.push_back(cs);
      cs = region;
      h = win[2];
      w = win[3];
    }
    batch->streams_.push_back(cs);
    batch->which_.push_back(k);
    batch->sizes_.push_back(h);
    batch->sizes_.push_back(w);
  }
  return batch;
}

std::tuple<ArrayOf<bool>, double> ImageCodecDecoder::decode(const ParsedBatch& batch, ArrayOf<uint64_t> dst,
                                                            I64Array pitches, uintptr_t cuda_stream,
                                                            const AroundDecoding& around) {
  int64_t n = batch.num_samples_;
  if (batch.closed_) throw std::invalid_argument("ImageCodecDecoder.decode: the parsed batch was closed");
  if (dst.size() != n || pitches.size() != n)
    throw std::invalid_argument("ImageCodecDecoder.decode: one address and pitch per sample");
  if (around.any() && host_buffers_)
    throw std::invalid_argument("ImageCodecDecoder.decode: a CPU-only decoder queues no CUDA work");
  const uint64_t* out = dst.data();
  const int64_t* pitch = pitches.data();
  for (size_t j = 0; j < batch.which_.size(); ++j)
    if (out[batch.which_[j]] != 0 && pitch[batch.which_[j]] < 3 * batch.sizes_[2 * j + 1])
      throw std::invalid_argument("ImageCodecDecoder.decode: sample " + std::to_string(batch.which_[j]) +
                                  ": the row pitch is less than its width");
  auto decoded = ArrayOf<bool>::empty({n});
  bool* ok = decoded.mutable_data();
  std::fill(ok, ok + n, false);
  double seconds = run(batch, out, pitch, reinterpret_cast<void*>(cuda_stream), around, ok);
  return {decoded, seconds};
}

double ImageCodecDecoder::run(const ParsedBatch& batch, const uint64_t* out, const int64_t* pitch, void* stream,
                              const AroundDecoding& around, bool* ok) {
  std::vector<size_t> chosen;  // positions in the parsed batch decoded now
  for (size_t j = 0; j < batch.which_.size(); ++j)
    if (out[batch.which_[j]] != 0) chosen.push_back(j);
  size_t m = chosen.size();
  std::vector<Handle> streams, images;
  streams.reserve(m);
  images.reserve(m);
  std::vector<int> status(m, 0);
  double seconds = 0;
  try {
    for (size_t j : chosen) {
      int64_t k = batch.which_[j];
      streams.push_back(batch.streams_[j]);
      ImageInfo target = make<ImageInfo>(kImageInfo);
      target.color_spec = kColorSrgb;
      target.sample_format = kFormatInterleavedRgb;
      target.num_planes = 1;
      PlaneInfo& plane = target.plane_info[0];
      plane.hdr = Header{kImagePlaneInfo, sizeof(PlaneInfo), nullptr};
      plane.height = uint32_t(batch.sizes_[2 * j]);
      plane.width = uint32_t(batch.sizes_[2 * j + 1]);
      plane.row_stride = size_t(pitch[k]);
      plane.num_channels = 3;
      plane.sample_type = kSampleUint8;
      plane.precision = 8;
      target.buffer = reinterpret_cast<void*>(out[k]);
      target.buffer_kind = host_buffers_ ? kBufferHost : kBufferDevice;
      target.cuda_stream = stream;
      Handle image = nullptr;
      check(api_.ImageCreate(instance_, &image, &target), "creating an image");
      images.push_back(image);
    }
    bool wait_for_stream = hardware_ && m && !host_buffers_;
    const Driver* cuda = around.any() || wait_for_stream ? &driver() : nullptr;
    if (cuda) {
      void* context = nullptr;
      if (cuda->cuCtxGetCurrent(&context) != 0 || context == nullptr)
        throw std::runtime_error("ImageCodecDecoder.decode: no CUDA context is current on this thread");
    }
    std::lock_guard<std::mutex> turn(decoding_);
    if (around.wait_event) check_cuda(cuda->cuStreamWaitEvent(stream, reinterpret_cast<void*>(around.wait_event), 0),
                                      "waiting for the event");
    if (wait_for_stream) {
      if (!queued_)
        check_cuda(cuda->cuEventCreate(&queued_, kEventBlockingSync | kEventDisableTiming), "creating an event");
      check_cuda(cuda->cuEventRecord(queued_, stream), "recording the event");
      check_cuda(cuda->cuEventSynchronize(queued_), "waiting for the stream's queued work");
    }
    auto start = std::chrono::steady_clock::now();  // the decoder's own time: the split weighs its rate by it
    if (m) {
      DecodeParams params = make<DecodeParams>(kDecodeParams);
      params.apply_exif_orientation = batch.orient_ ? 1 : 0;
      Handle future = nullptr;
      check(api_.DecoderDecode(decoder_, streams.data(), images.data(), int(m), &params, &future), "decoding");
      int waited = api_.FutureWaitForAll(future);
      size_t count = m;
      int got = waited == 0 ? api_.FutureGetProcessingStatus(future, status.data(), &count) : waited;
      api_.FutureDestroy(future);
      check(got, "waiting for the decoding");
    }
    if (around.then_wait_event)
      check_cuda(cuda->cuStreamWaitEvent(stream, reinterpret_cast<void*>(around.then_wait_event), 0),
                 "waiting for the event after the decoding");
    if (around.then) {
      const KernelLaunch& k = *around.then;
      std::vector<uint64_t> values = k.params;
      std::vector<void*> params(values.size());
      for (size_t i = 0; i < values.size(); ++i) params[i] = &values[i];
      check_cuda(cuda->cuLaunchKernel(reinterpret_cast<void*>(k.function), k.grid, 1, 1, k.block, 1, 1, 0, stream,
                                      params.data(), nullptr),
                 "launching the kernel after the decoding");
    }
    if (around.done_event) check_cuda(cuda->cuEventRecord(reinterpret_cast<void*>(around.done_event), stream),
                                      "recording the event");
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (...) {
    for (Handle h : images) api_.ImageDestroy(h);
    throw;
  }
  for (Handle h : images) api_.ImageDestroy(h);
  for (size_t i = 0; i < m; ++i) ok[batch.which_[chosen[i]]] = status[i] == kProcessingSuccess;
  return seconds;
}

}  // namespace penstock
