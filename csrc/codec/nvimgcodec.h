// nvImageCodec's decoder through its C API, opened at run time (nvimgcodec.cpp says how it is used).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "codec/codec_memory.h"
#include "codec/nvimgcodec_api.h"
#include "engine/kernel.h"

namespace penstock {

// A kernel launch, its parameters integers (device addresses, counts): each is passed from 8 bytes,
// of which the driver reads as many as the kernel's parameter has (little-endian).
struct KernelLaunch {
  uintptr_t function;
  unsigned grid, block;
  std::vector<uint64_t> params;
};

// The work queued around one decoding, on its stream.
struct AroundDecoding {
  uintptr_t wait_event = 0;  // waited for before the decoding (0: none)
  uintptr_t then_wait_event = 0;  // waited for after the decoding, before `then` (0: none)
  std::optional<KernelLaunch> then;  // launched after it
  uintptr_t done_event = 0;  // recorded last (0: none)
  bool any() const { return wait_event || then_wait_event || then || done_event; }
};

// A batch's code streams, parsed (headers read) ahead of its decoding. Holds the encoded buffer,
// which nvImageCodec reads in place.
class ParsedBatch {
 public:
  ParsedBatch(const codec::Api& api, Array encoded, int64_t num_samples, bool orient)
      : api_(api), encoded_(std::move(encoded)), num_samples_(num_samples), orient_(orient) {}
  ParsedBatch(const ParsedBatch&) = delete;
  ParsedBatch& operator=(const ParsedBatch&) = delete;
  ~ParsedBatch();

  // the samples whose headers parsed and matched the expected size: only these are decoded
  ArrayOf<bool> parsed() const;

  // Destroys the code streams once the batch is decoded (the destructor does otherwise, where the
  // binding holds the GIL); decode() refuses the batch afterwards.
  void close();

 private:
  friend class ImageCodecDecoder;
  const codec::Api& api_;
  Array encoded_;
  int64_t num_samples_;
  bool orient_;
  std::vector<codec::Handle> streams_;  // what is decoded: a whole code stream, or a region of one
  std::vector<codec::Handle> regions_of_;  // the code streams the regions are views of, kept while they are
  std::vector<int64_t> which_;  // sample index of each stream
  std::vector<int64_t> sizes_;  // (H, W) each stream decodes to
  bool closed_ = false;
};

// One nvImageCodec instance and decoder. parse() and decode() may be called from several threads:
// one batch's headers are read while another batch decodes; the decoding itself takes turns.
class ImageCodecDecoder {
 public:
  ImageCodecDecoder(const std::string& library, const std::string& extensions, int device_id, int cpu_threads,
                    const std::vector<std::tuple<int, float, int>>& backends, const std::string& options);
  ~ImageCodecDecoder();

  // Sample k: bytes [starts[k], starts[k] + lengths[k]) of `encoded`, an image expected to be of
  // shapes[k] = (H, W, ...) (its first two columns). Samples that do not parse, have another size,
  // or (with `orient`) an EXIF orientation other than the identity are left out (ParsedBatch.parsed()).
  // With `windows` (rows y, x, h, w inside the images), sample k decodes only its window, an h x w
  // image (nvImageCodec gives the region to nvJPEG's hardware engines where nvJPEG says they
  // support it, else to its CUDA decoder if among the backends); a window that cannot be made a
  // region of its code stream leaves its sample out.
  std::unique_ptr<ParsedBatch> parse(ArrayOf<uint8_t> encoded, I64Array starts, I64Array lengths, I64Array shapes,
                                     bool orient, std::optional<I64Array> windows);

  // Decodes the parsed samples to RGB uint8 HWC: sample k at address dst[k] (device memory, host
  // memory for a CPU-only decoder), rows pitches[k] bytes apart; a sample whose address is 0 is
  // not decoded this time. The output is ordered on `cuda_stream`, and so is the work `around` it
  // (queued with the decoder's turn held). With the hardware engines among the backends, the
  // decoding starts only once the work queued on the stream before it (`around`'s wait included)
  // has run: the engines write their outputs without waiting for it. Returns which samples were
  // decoded (the others were not written) and the seconds the call held the decoder's turn, that
  // wait left out.
  std::tuple<ArrayOf<bool>, double> decode(const ParsedBatch& batch, ArrayOf<uint64_t> dst, I64Array pitches,
                                           uintptr_t cuda_stream, const AroundDecoding& around);

  // The codecs' memory held: (device, pinned) counts; zeros for a CPU-only decoder.
  std::pair<codec::CodecMemory::Counts, codec::CodecMemory::Counts> memory() const;

 private:
  double run(const ParsedBatch& batch, const uint64_t* out, const int64_t* pitch, void* stream,
             const AroundDecoding& around, bool* ok);

  const codec::Api& api_;
  bool host_buffers_;
  bool hardware_ = false;  // nvJPEG's hardware engines among the backends
  // the codecs' device and pinned memory (a GPU decoder's), kept for reuse: freed, it would wait for the GPU
  std::unique_ptr<codec::CodecMemory> device_memory_, pinned_memory_;
  codec::Allocator device_allocator_{}, pinned_allocator_{};
  codec::Handle instance_ = nullptr;
  codec::Handle decoder_ = nullptr;
  std::mutex decoding_;
  void* queued_ = nullptr;  // a blocking-sync event: the stream's queued work, waited for asleep
};

}  // namespace penstock
