// Which copies of libjpeg and libpng the engine's calls reach. setup.py links private copies
// (penstock/_libs, sonames of their own), so another library of the usual soname loaded first
// (torchvision's wheel brings libjpeg-turbo 2.0.0 as libjpeg.so.8) cannot stand in for them. One
// loaded with RTLD_GLOBAL still could: the import then fails, naming it, instead of decoding with
// a library the engine was not built against.
#include <dlfcn.h>

#include <cstdio>  // jpeglib.h uses FILE
#include <string>

#include <jpeglib.h>
#include <png.h>

#include "kernels/image_decode_libraries.h"

namespace penstock {
namespace {

std::string file_of(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string folder_of(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

}  // namespace

std::map<std::string, std::string> image_libraries() {
  return {{"engine", file_of(reinterpret_cast<const void*>(&image_libraries))},
          {"libjpeg", file_of(reinterpret_cast<const void*>(&jpeg_std_error))},
          {"libpng", file_of(reinterpret_cast<const void*>(&png_create_read_struct))}};
}

std::string interposed_image_library() {
#ifdef PENSTOCK_PRIVATE_LIBS
  auto found = image_libraries();
  std::string own = folder_of(found["engine"]) + "/" + PENSTOCK_PRIVATE_LIBS;
  for (const char* library : {"libjpeg", "libpng"})
    if (folder_of(found[library]) != own)
      return "penstock._engine: " + std::string(library) + "'s functions resolve to " + found[library] +
             " instead of penstock's own copy in " + own +
             ": a library loaded into the process with RTLD_GLOBAL interposes them; load it "
             "without RTLD_GLOBAL, or import penstock first";
#endif
  return "";
}

}  // namespace penstock
