// Each kernel file adds its own Python bindings with PENSTOCK_BINDINGS(name) { ... }, so new
// kernels need no edit of a shared file. bindings.cpp runs every registered binder.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/thread_pool.h"

namespace penstock {

namespace py = pybind11;

using Binder = void (*)(py::module_&);

// Shapes, offsets and other int64 arguments cross as C-contiguous int64 arrays.
using I64Array = py::array_t<int64_t, py::array::c_style>;

// Thrown by a kernel when one sample is bad (corrupt file, out-of-range argument ...). Reaches
// Python as penstock._engine.SampleError with args (message, sample_index), so the executor can
// name the sample's source (file name) in the error it raises.
struct SampleError : std::runtime_error {
  SampleError(int64_t sample_index, const std::string& message)
      : std::runtime_error(message), sample(sample_index) {}
  int64_t sample;
};

inline std::vector<std::pair<const char*, Binder>>& binders() {
  static std::vector<std::pair<const char*, Binder>> list;
  return list;
}

struct BinderRegistration {
  BinderRegistration(const char* name, Binder b) { binders().emplace_back(name, b); }
};

// A batch of samples packed in one buffer: sample i starts at element offsets[i] and has
// shape shapes[i, :]. This is how every TensorListCPU crosses into native code.
struct BatchView {
  void* data = nullptr;
  int64_t num_samples = 0;
  int64_t ndim = 0;
  const int64_t* shapes = nullptr;   // [num_samples, ndim]
  const int64_t* offsets = nullptr;  // [num_samples], in elements
  int64_t elem_size = 1;

  int64_t volume(int64_t i) const {
    int64_t v = 1;
    for (int64_t d = 0; d < ndim; ++d) v *= shapes[i * ndim + d];
    return v;
  }
  const int64_t* shape(int64_t i) const { return shapes + i * ndim; }
  template <typename T>
  T* sample(int64_t i) const { return static_cast<T*>(data) + offsets[i]; }
};

// Builds a BatchView from (buffer, shapes[N, ndim] int64, offsets[N] int64). The arrays must
// outlive the view; the GIL may be released while it is used.
BatchView make_batch_view(py::array& data, I64Array& shapes, I64Array& offsets, bool writable);

// An uninitialized uint8 array of `nbytes` from the host buffer pool (engine/buffer_pool.h);
// kernels that size their outputs themselves allocate them with this. Needs the GIL.
py::array empty_pooled(size_t nbytes);

}  // namespace penstock

namespace py = pybind11;  // kernel files use py:: in their bindings

#define PENSTOCK_CONCAT_(a, b) a##b
#define PENSTOCK_CONCAT(a, b) PENSTOCK_CONCAT_(a, b)
#define PENSTOCK_BINDINGS(name)                                                        \
  static void PENSTOCK_CONCAT(bind_, name)(::pybind11::module_ & m);                    \
  static ::penstock::BinderRegistration PENSTOCK_CONCAT(registration_, name)(#name,    \
      &PENSTOCK_CONCAT(bind_, name));                                                   \
  static void PENSTOCK_CONCAT(bind_, name)(::pybind11::module_ & m)
