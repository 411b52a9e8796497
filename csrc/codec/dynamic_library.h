// Entry points of a library opened at run time (dlopen), looked up by name.
#pragma once
#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace penstock::codec {

template <typename F>
inline void bind(void* lib, const char* name, F& fn) {
  void* sym = dlsym(lib, name);
  if (!sym) throw std::runtime_error(std::string("nvImageCodec: the library has no ") + name);
  fn = reinterpret_cast<F>(sym);
}

// An entry point that older versions of the library lack: null then.
template <typename F>
inline void bind_if_present(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace penstock::codec
