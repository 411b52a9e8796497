// Loading nvImageCodec's entry points (see nvimgcodec_api.h).
#include "codec/nvimgcodec_api.h"

#include <iterator>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codec/dynamic_library.h"

namespace penstock::codec {

const Api& api(const std::string& library) {
  static std::mutex lock;
  static std::vector<std::pair<std::string, std::unique_ptr<Api>>> loaded;
  std::lock_guard<std::mutex> guard(lock);
  for (auto& [path, a] : loaded)
    if (path == library) return *a;
  // never closed: CUDA libraries do not unload cleanly while the process runs
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw std::runtime_error("nvImageCodec: cannot load " + library + ": " + dlerror());
  auto a = std::make_unique<Api>();
  bind(lib, "nvimgcodecGetProperties", a->GetProperties);  // first: the version decides the rest
  Properties props = make<Properties>(kProperties);
  if (a->GetProperties(&props) != 0 || props.version < kOldestVersion)
    throw std::runtime_error("nvImageCodec: " + library + " is version " + std::to_string(props.version / 1000) + "." +
                             std::to_string(props.version % 1000 / 100) + "." + std::to_string(props.version % 100) +
                             ", older than 0.9.0, whose C API penstock uses: upgrade nvidia-nvimgcodec-cu12/cu13");
#define PENSTOCK_NVIMGCODEC_BIND(name) bind(lib, "nvimgcodec" #name, a->name);
  PENSTOCK_NVIMGCODEC_BIND(InstanceCreate) PENSTOCK_NVIMGCODEC_BIND(InstanceDestroy)
  PENSTOCK_NVIMGCODEC_BIND(DecoderCreate) PENSTOCK_NVIMGCODEC_BIND(DecoderDestroy) PENSTOCK_NVIMGCODEC_BIND(DecoderDecode)
  PENSTOCK_NVIMGCODEC_BIND(CodeStreamCreateFromHostMem) PENSTOCK_NVIMGCODEC_BIND(CodeStreamGetImageInfo)
  PENSTOCK_NVIMGCODEC_BIND(CodeStreamGetSubCodeStream)
  PENSTOCK_NVIMGCODEC_BIND(CodeStreamDestroy) PENSTOCK_NVIMGCODEC_BIND(ImageCreate) PENSTOCK_NVIMGCODEC_BIND(ImageDestroy)
  PENSTOCK_NVIMGCODEC_BIND(FutureWaitForAll) PENSTOCK_NVIMGCODEC_BIND(FutureGetProcessingStatus)
  PENSTOCK_NVIMGCODEC_BIND(FutureDestroy)
#undef PENSTOCK_NVIMGCODEC_BIND
  loaded.emplace_back(library, std::move(a));
  return *loaded.back().second;
}

void check(int status, const char* what) {
  if (status == 0) return;
  // nvimgcodecStatus_t's names, so that a failure says which without the header at hand
  static const char* const kNames[] = {"SUCCESS", "NOT_INITIALIZED", "INVALID_PARAMETER", "BAD_CODESTREAM",
                                       "CODESTREAM_UNSUPPORTED", "ALLOCATOR_FAILURE", "EXECUTION_FAILED",
                                       "ARCH_MISMATCH", "INTERNAL_ERROR", "IMPLEMENTATION_UNSUPPORTED",
                                       "MISSED_DEPENDENCIES", "EXTENSION_NOT_INITIALIZED"};
  std::string name = status > 0 && status < int(std::size(kNames)) ? std::string(" (") + kNames[status] + ")" : "";
  throw std::runtime_error(std::string("nvImageCodec: ") + what + " failed with status " + std::to_string(status) +
                           name);
}

}  // namespace penstock::codec
