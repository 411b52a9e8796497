// decoders.audio and readers.nemo_asr (operators/audio_decode.py): WAV, FLAC, OGG/Vorbis and
// Opus through libsndfile, a batch per call. libsndfile is opened at run
// time (dlopen) from the path Python gives (the copy the soundfile wheel bundles, or the
// system's), so the engine builds and imports without it. Its few entry points are declared here
// with the layout of libsndfile's public header, stable since 1.0.
//
// Per sample: the header is read (all samples in parallel), the output batch is allocated, then
// every sample is decoded in parallel: straight into the output type when neither
// downmixing nor resampling is asked for (libsndfile's own integer and float conversions, as DALI
// does), else to float, averaged over channels, resampled (audio_resample.h) and converted.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/audio_decode.h"
#include "kernels/audio_resample.h"
#include "kernels/numeric.h"

namespace penstock {
namespace {

// ---- libsndfile's C API (sndfile.h) -------------------------------------------------------------
using sf_count_t = int64_t;
struct SNDFILE;
struct SF_INFO {
  sf_count_t frames;
  int samplerate, channels, format, sections, seekable;
};
struct SF_VIRTUAL_IO {
  sf_count_t (*get_filelen)(void*);
  sf_count_t (*seek)(sf_count_t, int, void*);
  sf_count_t (*read)(void*, sf_count_t, void*);
  sf_count_t (*write)(const void*, sf_count_t, void*);
  sf_count_t (*tell)(void*);
};
constexpr int SFM_READ = 0x10;

struct Sndfile {
  SNDFILE* (*open_virtual)(SF_VIRTUAL_IO*, int, SF_INFO*, void*) = nullptr;
  int (*close)(SNDFILE*) = nullptr;
  const char* (*strerror)(SNDFILE*) = nullptr;
  sf_count_t (*seek)(SNDFILE*, sf_count_t, int) = nullptr;
  sf_count_t (*readf_short)(SNDFILE*, int16_t*, sf_count_t) = nullptr;
  sf_count_t (*readf_int)(SNDFILE*, int32_t*, sf_count_t) = nullptr;
  sf_count_t (*readf_float)(SNDFILE*, float*, sf_count_t) = nullptr;
  const char* (*version)() = nullptr;
};

std::mutex g_library_mutex;
Sndfile* g_sndfile = nullptr;  // set once, never unloaded

template <typename F>
void load_symbol(void* handle, const char* name, F& slot, const std::string& path) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!slot) throw std::runtime_error("libsndfile at '" + path + "' lacks " + name);
}

}  // namespace

// Opens libsndfile from `path` (once per process; later calls return the loaded version).
std::string audio_library(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_library_mutex);
  if (!g_sndfile) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error("cannot load libsndfile from '" + path + "': " + dlerror());
    auto lib = std::make_unique<Sndfile>();
    load_symbol(handle, "sf_open_virtual", lib->open_virtual, path);
    load_symbol(handle, "sf_close", lib->close, path);
    load_symbol(handle, "sf_strerror", lib->strerror, path);
    load_symbol(handle, "sf_seek", lib->seek, path);
    load_symbol(handle, "sf_readf_short", lib->readf_short, path);
    load_symbol(handle, "sf_readf_int", lib->readf_int, path);
    load_symbol(handle, "sf_readf_float", lib->readf_float, path);
    load_symbol(handle, "sf_version_string", lib->version, path);
    g_sndfile = lib.release();
  }
  return g_sndfile->version();
}

namespace {

const Sndfile& sndfile() {
  if (!g_sndfile) throw std::runtime_error("audio decoding: libsndfile is not loaded (audio_library first)");
  return *g_sndfile;
}

// ---- an encoded file in memory, read through libsndfile's virtual I/O ----------------------------
struct MemoryFile {
  const uint8_t* data;
  sf_count_t size, pos = 0;
};

sf_count_t vio_length(void* user) { return static_cast<MemoryFile*>(user)->size; }
sf_count_t vio_seek(sf_count_t offset, int whence, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->size;
  sf_count_t to = base + offset;
  if (to < 0 || to > f->size) return -1;
  return f->pos = to;
}
sf_count_t vio_read(void* dst, sf_count_t count, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  sf_count_t n = std::max<sf_count_t>(0, std::min(count, f->size - f->pos));
  std::memcpy(dst, f->data + f->pos, n);
  f->pos += n;
  return n;
}
sf_count_t vio_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t vio_tell(void* user) { return static_cast<MemoryFile*>(user)->pos; }
SF_VIRTUAL_IO g_vio = {vio_length, vio_seek, vio_read, vio_write, vio_tell};

// One open file, closed when it goes.
struct OpenAudio {
  MemoryFile file{nullptr, 0};
  SNDFILE* handle = nullptr;
  SF_INFO info{};
  int64_t first = 0, frames = 0;  // the decoded range [first, first + frames)
  int64_t out_frames = 0;
  int out_channels = 0;
  double out_rate = 0;
  ~OpenAudio() {
    if (handle) sndfile().close(handle);
  }
};

constexpr int SF_FORMAT_SUBMASK = 0x0000FFFF, SF_FORMAT_PCM_16 = 0x0002;

// 16-bit PCM as float: read as shorts and scaled by 1 / 32768 here, as libsndfile scales them
// (exactly: a power of two), in a loop that vectorizes (libsndfile's conversion costs as much as
// the reading).
sf_count_t read_pcm16_as_float(SNDFILE* f, float* dst, sf_count_t frames, int channels) {
  constexpr sf_count_t kFrames = 4096;
  thread_local std::vector<int16_t> block;
  block.resize(kFrames * channels);
  sf_count_t done = 0;
  while (done < frames) {
    const sf_count_t want = std::min(kFrames, frames - done);
    const sf_count_t got = sndfile().readf_short(f, block.data(), want);
    if (got <= 0) break;
    float* out = dst + done * channels;
    for (sf_count_t k = 0; k < got * channels; ++k) out[k] = block[k] * (1.0f / 32768);
    done += got;
    if (got < want) break;
  }
  return done;
}

template <typename T>
sf_count_t read_frames(const OpenAudio& a, T* dst, sf_count_t frames) {
  const Sndfile& lib = sndfile();
  if constexpr (std::is_same_v<T, int16_t>) return lib.readf_short(a.handle, dst, frames);
  if constexpr (std::is_same_v<T, int32_t>) return lib.readf_int(a.handle, dst, frames);
  if constexpr (std::is_same_v<T, float>) {
    if ((a.info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16)
      return read_pcm16_as_float(a.handle, dst, frames, a.info.channels);
    return lib.readf_float(a.handle, dst, frames);
  }
}

// Frames [first, first + frames) of sample i as T (interleaved), or an error naming what failed.
template <typename T>
void read_range(OpenAudio& a, int64_t i, T* dst) {
  if (a.first > 0 && sndfile().seek(a.handle, a.first, SEEK_SET) != a.first)
    throw SampleError(i, "cannot seek to frame " + std::to_string(a.first) + ": " + sndfile().strerror(a.handle));
  sf_count_t got = read_frames(a, dst, a.frames);
  if (got != a.frames)
    throw SampleError(i, "truncated or corrupt audio: decoded " + std::to_string(std::max<sf_count_t>(got, 0)) +
                             " of " + std::to_string(a.frames) + " frames (" + sndfile().strerror(a.handle) + ")");
}

template <typename Out>
void decode_one(OpenAudio& a, int64_t i, Out* out, bool downmix, const SincResampler* resampler,
                std::vector<float>& scratch, std::vector<float>& mixed) {
  const int channels = a.info.channels;
  const bool resample = a.out_rate != a.info.samplerate;
  if (!resample && !(downmix && channels > 1)) {
    read_range(a, i, out);
    return;
  }
  scratch.resize(size_t(a.frames) * channels);
  read_range(a, i, scratch.data());
  const float* signal = scratch.data();
  int signal_channels = channels;
  if (downmix && channels > 1) {
    mixed.resize(a.frames);
    const float factor = 1.0f / channels;
    for (int64_t t = 0; t < a.frames; ++t) {
      float sum = scratch[t * channels];
      for (int c = 1; c < channels; ++c) sum += scratch[t * channels + c];
      mixed[t] = sum * factor;
    }
    signal = mixed.data();
    signal_channels = 1;
  }
  if (resample) {
    resampler->resample(out, a.out_frames, a.out_rate, signal, a.frames, a.info.samplerate, signal_channels);
  } else {
    for (int64_t k = 0; k < a.frames * signal_channels; ++k) out[k] = from_unit<Out>(signal[k]);
  }
}

}  // namespace

// Decodes a batch of encoded files. `target_rates[i]` > 0 resamples sample i to that rate;
// `starts`/`durations` (seconds, optional) pick a range of each file (readers.nemo_asr's offset
// and duration; a duration <= 0 runs to the end). Returns (buffer, shapes [N, 1 or 2], offsets,
// the files' own sample rates [N] float32).
std::tuple<Array, I64Array, I64Array, ArrayOf<float>> audio_decode(
    ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, int out_type, bool downmix,
    ArrayOf<double, true> target_rates, double quality, std::optional<ArrayOf<double, true>> starts,
    std::optional<ArrayOf<double, true>> durations) {
  BatchView in = make_batch_view(src, shapes, offsets, false);
  if (dtype_code(src) != static_cast<int>(DType::UINT8))
    throw std::invalid_argument("audio_decode: encoded audio must be uint8 bytes");
  const int64_t n = in.num_samples;
  auto check_n = [n](const Array& a, const char* what) {
    if (a.ndim() != 1 || a.shape(0) != n) throw std::invalid_argument(std::string("audio_decode: ") + what + " must be [N]");
  };
  check_n(target_rates, "target_rates");
  if (starts) check_n(*starts, "starts");
  if (durations) check_n(*durations, "durations");
  if (out_type != int(DType::INT16) && out_type != int(DType::INT32) && out_type != int(DType::FLOAT))
    throw std::invalid_argument("audio_decode: the output type must be INT16, INT32 or FLOAT");
  const Sndfile& lib = sndfile();
  std::vector<OpenAudio> files(n);
  const double* rates = target_rates.data();
  const double* start_s = starts ? starts->data() : nullptr;
  const double* duration_s = durations ? durations->data() : nullptr;
  pool.parallel_for(n, [&](int64_t i) {
    OpenAudio& a = files[i];
    a.file = MemoryFile{in.sample<uint8_t>(i), in.volume(i)};
    a.handle = lib.open_virtual(&g_vio, SFM_READ, &a.info, &a.file);
    if (!a.handle) throw SampleError(i, std::string("cannot decode audio: ") + lib.strerror(nullptr));
    if (a.info.channels < 1 || a.info.samplerate < 1 || a.info.frames < 0)
      throw SampleError(i, "cannot decode audio: invalid header (" + std::to_string(a.info.channels) +
                               " channels, " + std::to_string(a.info.samplerate) + " Hz)");
    // Never allocate from a length no file of this size can hold (a stream of unknown length
    // reports the largest count; a corrupt header anything): even silence compresses to less
    // than 64 Ki samples per byte in these formats.
    constexpr int64_t kMaxSamplesPerByte = 1 << 16;
    if (a.info.frames > kMaxSamplesPerByte * (in.volume(i) + 4096) / a.info.channels)
      throw SampleError(i, "cannot decode audio: the header claims " + std::to_string(a.info.frames) +
                               " frames, more than a file of " + std::to_string(in.volume(i)) +
                               " bytes can hold");
    const double rate = a.info.samplerate;
    a.first = start_s ? std::clamp<int64_t>(static_cast<int64_t>(start_s[i] * rate), 0, a.info.frames) : 0;
    a.frames = a.info.frames - a.first;
    if (duration_s && duration_s[i] > 0)
      a.frames = std::min<int64_t>(a.frames, static_cast<int64_t>(duration_s[i] * rate));
    a.out_rate = rates[i] > 0 ? rates[i] : rate;
    a.out_frames = a.out_rate != rate ? resampled_length(a.frames, rate, a.out_rate) : a.frames;
    a.out_channels = downmix ? 1 : a.info.channels;
  });
  // mono without downmixing keeps its channel axis, as in DALI: (n, 1)
  const int ndim = downmix ? 1 : 2;
  auto out_shapes = I64Array::empty({n, int64_t(ndim)});
  auto out_offsets = I64Array::empty({n});
  auto file_rates = ArrayOf<float>::empty({n});
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    out_shapes.mutable_data()[i * ndim] = files[i].out_frames;
    if (ndim == 2) out_shapes.mutable_data()[i * ndim + 1] = files[i].out_channels;
    out_offsets.mutable_data()[i] = total;
    file_rates.mutable_data()[i] = static_cast<float>(files[i].info.samplerate);
    total += files[i].out_frames * files[i].out_channels;
  }
  const int64_t elem = out_type == int(DType::INT16) ? 2 : 4;
  Array out = Array::empty(out_type == int(DType::FLOAT) ? 'f' : 'i', elem, {total}, true);
  char* base = static_cast<char*>(out.mutable_data());
  const int64_t* out_off = out_offsets.data();
  const SincResampler resampler(resampling_lobes(quality));
  pool.parallel_for(n, [&](int64_t i) {
    thread_local std::vector<float> scratch, mixed;
    char* dst = base + out_off[i] * elem;
    switch (static_cast<DType>(out_type)) {
      case DType::INT16: decode_one(files[i], i, reinterpret_cast<int16_t*>(dst), downmix, &resampler, scratch, mixed); break;
      case DType::INT32: decode_one(files[i], i, reinterpret_cast<int32_t*>(dst), downmix, &resampler, scratch, mixed); break;
      default: decode_one(files[i], i, reinterpret_cast<float*>(dst), downmix, &resampler, scratch, mixed); break;
    }
  });
  return {out, out_shapes, out_offsets, file_rates};
}

}  // namespace penstock
