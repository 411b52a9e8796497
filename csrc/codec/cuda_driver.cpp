// Loading the CUDA driver's entry points (see cuda_driver.h).
#include "codec/cuda_driver.h"

#include <stdexcept>
#include <string>

#include "codec/dynamic_library.h"

namespace penstock::codec {

const Driver& driver() {
  static const Driver loaded = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(std::string("cannot load the CUDA driver: ") + dlerror());
    Driver d;
    bind(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent);
    bind(lib, "cuStreamWaitEvent", d.cuStreamWaitEvent);
    bind(lib, "cuEventRecord", d.cuEventRecord);
    bind(lib, "cuLaunchKernel", d.cuLaunchKernel);
    bind(lib, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync);
    bind(lib, "cuEventCreate", d.cuEventCreate);
    bind(lib, "cuEventDestroy_v2", d.cuEventDestroy);
    return d;
  }();
  return loaded;
}

void check_cuda(int status, const char* what) {
  if (status != 0)
    throw std::runtime_error(std::string("CUDA driver: ") + what + " failed with CUDA error " +
                             std::to_string(status));
}

}  // namespace penstock::codec
