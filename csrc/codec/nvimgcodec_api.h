// nvImageCodec's C API as penstock uses it, opened at run time: the few structures, declared with
// the layout of nvImageCodec's public header (nvimgcodec.h, API 0.x): every one starts with
// (type, size, next) and the library checks the type; and the entry points, looked up once per
// library path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace penstock::codec {

// structure types, enums and limits of the public header
constexpr int kProperties = 1, kInstanceCreateInfo = 2, kDeviceAllocator = 3, kPinnedAllocator = 4;
constexpr int kDecodeParams = 5, kRegion = 8, kCodeStreamView = 9;
constexpr int kImageInfo = 11, kImagePlaneInfo = 12;
constexpr int kBackend = 17, kBackendParams = 29, kExecutionParams = 30;
constexpr int kBackendHwGpuOnly = 4;  // a backend's kind: nvJPEG's hardware engines
constexpr int kSampleUint8 = 0x0802, kFormatInterleavedRgb = 8, kColorSrgb = 1;
constexpr int kBufferDevice = 1, kBufferHost = 2;
constexpr int kProcessingSuccess = 1;
constexpr int kMaxPlanes = 32, kMaxCodecName = 256, kMaxDims = 5, kMaxFillChannels = 5;
constexpr int kCpuOnlyDevice = -99999;
constexpr uint32_t kOldestVersion = 900;  // 0.9.0 (major * 1000 + minor * 100 + patch): these layouts

struct Header {
  int struct_type;
  size_t struct_size;
  void* struct_next;
};

template <typename T>
T make(int type) {
  T s;
  std::memset(&s, 0, sizeof(T));
  s.hdr = Header{type, sizeof(T), nullptr};
  return s;
}

struct Properties {
  Header hdr;
  uint32_t version, cudart_version;
};

struct CreateInfo {
  Header hdr;
  int load_builtin_modules, load_extension_modules;
  const char* extension_modules_path;
  int create_debug_messenger;
  const void* debug_messenger_desc;
  uint32_t message_severity, message_category;
};

struct Orientation {
  Header hdr;
  int rotated, flip_x, flip_y;
};

struct Region {
  Header hdr;
  int ndim;  // 0: the whole image
  int start[kMaxDims], end[kMaxDims];  // (y, x), end exclusive
  int out_of_bounds_policy;
  struct {
    uint32_t value;
    int sample_type;
  } out_of_bounds_samples[kMaxFillChannels];
};

// A part of a code stream: one of its images, a region of it
struct CodeStreamView {
  Header hdr;
  size_t image_idx;
  Region region;
  size_t bitstream_offset;
};

struct PlaneInfo {
  Header hdr;
  uint32_t width, height;
  size_t row_stride;
  uint32_t num_channels;
  int sample_type;
  uint8_t precision;
};

struct ImageInfo {
  Header hdr;
  char codec_name[kMaxCodecName];
  int color_spec, chroma_subsampling, sample_format;
  Orientation orientation;
  uint32_t num_planes;
  PlaneInfo plane_info[kMaxPlanes];
  void* buffer;
  int buffer_kind;
  void* cuda_stream;
};

struct BackendParams {
  Header hdr;
  float load_hint;
  int load_hint_policy;
};

struct Backend {
  Header hdr;
  int kind;
  BackendParams params;
};

// nvimgcodecDeviceAllocator_t and nvimgcodecPinnedAllocator_t: the same layout, other names
struct Allocator {
  Header hdr;
  int (*allocate)(void* ctx, void** ptr, size_t size, void* stream);
  int (*free)(void* ctx, void* ptr, size_t size, void* stream);
  void* ctx;
  size_t padding;
};

struct ExecutionParams {
  Header hdr;
  Allocator* device_allocator;
  Allocator* pinned_allocator;
  int max_num_cpu_threads;
  void* executor;
  int device_id, pre_init, skip_pre_sync, num_backends;
  const Backend* backends;
};

struct DecodeParams {
  Header hdr;
  int apply_exif_orientation;
};

using Handle = void*;

// The entry points used, looked up once per library path.
struct Api {
  int (*GetProperties)(Properties*);
  int (*InstanceCreate)(Handle*, const CreateInfo*);
  int (*InstanceDestroy)(Handle);
  int (*DecoderCreate)(Handle, Handle*, const ExecutionParams*, const char*);
  int (*DecoderDestroy)(Handle);
  int (*CodeStreamCreateFromHostMem)(Handle, Handle*, const unsigned char*, size_t, const void*);
  int (*CodeStreamGetImageInfo)(Handle, ImageInfo*);
  int (*CodeStreamGetSubCodeStream)(Handle, Handle*, const CodeStreamView*);
  int (*CodeStreamDestroy)(Handle);
  int (*ImageCreate)(Handle, Handle*, const ImageInfo*);
  int (*ImageDestroy)(Handle);
  int (*DecoderDecode)(Handle, const Handle*, const Handle*, int, const DecodeParams*, Handle*);
  int (*FutureWaitForAll)(Handle);
  int (*FutureGetProcessingStatus)(Handle, int*, size_t*);
  int (*FutureDestroy)(Handle);
};

// The entry points of the library at `library`, loaded on first use (versions before 0.9.0 are refused).
const Api& api(const std::string& library);

// Throws for a non-zero status of an nvImageCodec call.
void check(int status, const char* what);

}  // namespace penstock::codec
