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

#include "engine/module.h"

namespace penstock {
namespace {

std::string file_of(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

std::string folder_of(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

py::dict image_libraries() {
  py::dict found;
  found["engine"] = file_of(reinterpret_cast<const void*>(&image_libraries));
  found["libjpeg"] = file_of(reinterpret_cast<const void*>(&jpeg_std_error));
  found["libpng"] = file_of(reinterpret_cast<const void*>(&png_create_read_struct));
  return found;
}

}  // namespace
}  // namespace penstock

PENSTOCK_BINDINGS(image_decode_libraries) {
  using namespace penstock;
  m.def("image_libraries", &image_libraries,
        "The files that the engine and its libjpeg and libpng functions were loaded from");
#ifdef PENSTOCK_PRIVATE_LIBS
  py::dict found = image_libraries();
  std::string own = folder_of(found["engine"].cast<std::string>()) + "/" + PENSTOCK_PRIVATE_LIBS;
  for (const char* library : {"libjpeg", "libpng"}) {
    std::string path = found[library].cast<std::string>();
    if (folder_of(path) != own)
      throw py::import_error("penstock._engine: " + std::string(library) + "'s functions resolve to " + path +
                             " instead of penstock's own copy in " + own +
                             ": a library loaded into the process with RTLD_GLOBAL interposes them; load it "
                             "without RTLD_GLOBAL, or import penstock first");
  }
#endif
}
